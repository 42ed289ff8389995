"""Sparse variational dropout layers and RNN cells."""
