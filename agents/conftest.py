"""Suite-wide setup: Triton loads before any test imports TensorFlow (see `load_order`)."""

from agents.tools import load_order

load_order.load_triton_before_tensorflow()
