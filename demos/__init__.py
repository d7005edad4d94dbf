"""Runnable demo scripts, importable as ``skfiber.demos.<name>``.

Each demo module has ``run(**options)`` returning a result object and
``main(argv=None)`` that prints a table and ends with one ``summary:`` line.
"""
