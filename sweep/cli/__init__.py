"""The ``sweep`` command line.

The ``sweep`` command line (typer): commands, output helpers, the results view and the
look-ahead check command.

The top layer: may import any package of ``sweep``; nothing imports it but ``__main__``
(and ``sweep.check_strategy``, re-exported).
"""
