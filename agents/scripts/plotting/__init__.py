"""Learning curves read from training runs and drawn (the plot command, the learning benchmark)."""
