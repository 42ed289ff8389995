"""`base._docs.append`: the shared sections follow an object's own
docstring (both dedented, one blank line apart), so that ``help()`` of a
technique's layer shows its own arguments and then the shared ones."""
import textwrap

import pytest

from tf1_awd_sparse.base import _docs

pytestmark = pytest.mark.per_python


def test_sections_follow_the_own_docstring_dedented():
    @_docs.append("""
        Args:
          x: the input.
    """, "Raises:\n  ValueError: a bad x.")
    def computes(x):
        """Computes.

        More about it.
        """
    assert computes.__doc__ == ("Computes.\n\nMore about it.\n\n"
                                "Args:\n  x: the input.\n\n"
                                "Raises:\n  ValueError: a bad x.\n")


def test_an_object_without_a_docstring_gets_the_sections_alone():
    @_docs.append("  Shared.\n")
    class Bare(object):
        pass
    assert Bare.__doc__ == "Shared.\n"


def test_a_layers_help_shows_its_own_and_the_shared_sections():
    from tf1_awd_sparse.layers.sparse import _layers
    from tf1_awd_sparse.layers.sparse.variational_dropout import layers
    doc = layers.FullyConnected.__doc__
    shared = textwrap.dedent(_layers.FULLY_CONNECTED_DOC).strip("\n")
    assert doc.startswith("Fully connected layer with sparse variational")
    assert doc.endswith("\n\n" + shared + "\n")
