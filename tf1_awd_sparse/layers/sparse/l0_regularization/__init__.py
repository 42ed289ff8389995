"""L0 (hard-concrete) layers and RNN cells."""
