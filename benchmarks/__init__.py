"""The work behind the hub's benchmark commands: timing helpers and the measurements they report.

Commands stay thin and call in here; the domain (memories, evaluation) never imports this package.
"""
