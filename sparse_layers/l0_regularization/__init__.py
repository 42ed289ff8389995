"""L0 regularization with hard-concrete gates: ops (`nn`), layers, cells."""
