"""Train the AWD-LSTM language model: the ``awd-lm train`` program
(`tf1_awd_sparse.awd_lm.programs.train`, where its flags, outputs and exit
status are documented), kept here for the docs, tests and benchmarks that
run this file.

  python examples/awd_lm.py --model both --preset demo
  (the same as: python -m tf1_awd_sparse.awd_lm train --model both ...)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _quiet  # noqa: F401,E402  (must precede the TensorFlow import)

from tf1_awd_sparse.awd_lm.programs.train import (  # noqa: E402,F401
    HELP, check_out, main, parse_args)

if __name__ == "__main__":
    sys.exit(main())
