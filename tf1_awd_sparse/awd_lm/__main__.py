"""``python -m tf1_awd_sparse.awd_lm SUBCOMMAND ...``: the ``awd-lm``
command (`programs.main`)."""
import sys

# TensorFlow is quieted by main, for the subcommands that import it.
from tf1_awd_sparse.awd_lm.programs.main import main

if __name__ == "__main__":
    sys.exit(main())
