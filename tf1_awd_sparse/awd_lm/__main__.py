"""``python -m tf1_awd_sparse.awd_lm SUBCOMMAND ...``: the ``awd-lm``
command (`programs.main`)."""
import sys

import tf1_awd_sparse.base._quiet  # noqa: F401  (before TensorFlow)
from tf1_awd_sparse.awd_lm.programs.main import main

if __name__ == "__main__":
    sys.exit(main())
