"""Command line scripts (train, visualize, plot), configs, networks and their helpers."""
