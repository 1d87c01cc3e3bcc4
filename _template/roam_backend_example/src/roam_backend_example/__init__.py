"""An example roam storage backend: the whole store in one SQLite file.

Importing this package imports nothing heavy; roam lists plugins without opening them.
"""

__version__ = "0.1.0"
