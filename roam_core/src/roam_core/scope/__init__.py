"""Which paths of a home are shared, local or ignored, decided before anything is read."""
