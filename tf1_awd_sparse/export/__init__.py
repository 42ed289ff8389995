"""Floor 4: export - :mod:`.tflite` (float and 8-bit TFLite models of cell
stacks, and their runner) and :mod:`.strip` (sparse pairs to plain dense
weights). Imports floors 0-3 only."""
