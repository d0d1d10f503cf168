"""Runners of our own for the neighbour tests (``tests/gate/test_neighbours.py``)."""
