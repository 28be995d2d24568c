"""Triton loads before TensorFlow, or PyTorch crashes the process next to TensorFlow.

PyTorch's CUDA wheels ship Triton, its kernel compiler, with a copy of LLVM,
and PyTorch loads it when the first optimizer is built (through
`torch._dynamo`). TensorFlow exports the symbols of its own LLVM; when it is
loaded first, Triton's static initialisers bind to them and the process dies
of a segmentation fault, without a message (TensorFlow 2.21 and Triton 3.8
do). Stable-Baselines3 loads TensorFlow, when it is installed, through
TensorBoard, so training SB3 in this project's environment crashes unless
Triton was loaded before; the other order is safe.
"""

import importlib
import importlib.util
import sys
import warnings


def load_triton_before_tensorflow():
    """Import Triton now, if it is installed and TensorFlow is not loaded yet.

    Does nothing when Triton is not installed (CPU wheels of PyTorch) or is
    loaded already.

    Returns:
      Whether Triton can be loaded in this process: False when TensorFlow is
      loaded already and Triton is installed but not loaded, which is also
      warned about.
    """
    if 'triton' in sys.modules or importlib.util.find_spec('triton') is None:
        return True
    if 'tensorflow' in sys.modules:
        warnings.warn(
            'TensorFlow was loaded before Triton: PyTorch may crash this process when it '
            'loads Triton (at the first optimizer). Import agents.tools.load_order and call '
            'load_triton_before_tensorflow() before anything imports TensorFlow.',
            RuntimeWarning, stacklevel=2)
        return False
    importlib.import_module('triton')
    return True
