"""The commands (train, visualize, plot, export, tune), configs, networks and their internals."""
