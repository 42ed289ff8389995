"""Floor 3: cells and layers - :mod:`.weight_drop_lstm` (the cell and the
sequence layer), :mod:`.dropout` (held, locked and embedding dropout) and
:mod:`.sparse` (sparse layers, cells, losses and reports). Imports floors
0-2 only."""
