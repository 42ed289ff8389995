"""Floor 3, sparse: layers and RNN cells of each technique, the training
penalties (:mod:`.losses`) and the sparsity reports (:mod:`.report`)."""
