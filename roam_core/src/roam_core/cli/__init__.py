"""The `roam` command line (argparse); Hermes's `hermes roam` reuses the same parser."""
