"""Sparse variational dropout: stateless ops (`nn`), layers, RNN cells."""
