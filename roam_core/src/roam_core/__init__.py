"""roam: keep a Hermes Agent home in sync between your machines.

Importing this package is cheap on purpose: no plugin is discovered and no backend
library (boto3, GitPython, httpx) or Hermes module is imported until a command needs it.
"""

__version__ = "0.1.0"
