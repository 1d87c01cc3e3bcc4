"""An example roam session sink: each finished turn POSTed as JSON to a webhook.

Importing this package imports nothing heavy; roam lists plugins without opening them.
"""

__version__ = "0.1.0"
