"""The one exception type the CLI turns into a single readable line instead of a traceback."""


class KappaShopError(Exception):
    """An ordinary mistake or missing prerequisite, explained in one line for the user.

    Raise it with a message that says what is wrong and what to do about it; the CLI prints it
    as ``kappa-shop: error: <message>`` and exits with status 1.
    """
