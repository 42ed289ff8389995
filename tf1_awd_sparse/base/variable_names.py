"""Names of a layer's variables relative to the layer's scope.

A cell built in ``lm/layer_0/`` and the same cell rebuilt for export in
``layer_0/`` hold the same variables under different full names; their
relative names (``'kernel'``, ``'quant/state/min'``) match. The language
model picks a cell's weights by these names and the exporter copies trained
values by them. The names are plain strings of ``Variable.name``: this
module uses no TensorFlow op and nothing of a higher floor.
"""
import os

__all__ = ["relative_variable_names"]


def relative_variable_names(variables):
    """Names of a layer's variables relative to the layer's scope: each
    variable's op name without the longest scope (ending in ``/``) that all
    of them share. One variable keeps its last name component.

    Args:
      variables: list of variables (anything with a ``.name`` such as
        ``'layer_0/kernel:0'``) of one layer.

    Returns:
      list of str, one per variable in order, e.g. ``'kernel'``,
      ``'quant/state/min'`` (an empty list for no variables). Raises
      nothing of its own.
    """
    names = [v.name.split(":")[0] for v in variables]
    prefix = os.path.commonprefix([n + "/" for n in names])
    prefix = prefix[:prefix.rfind("/") + 1]
    if len(names) == 1:
        prefix = names[0][:names[0].rfind("/") + 1]
    return [n[len(prefix):] for n in names]
