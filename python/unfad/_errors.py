"""The exceptions of unfad: every error of compiling or calling is an ``unfad.Error``."""


class Error(Exception):
    """An error of unfad. ``message`` is the text shown."""

    def __init__(self, message, **attributes):
        super().__init__(message)
        self.message = message
        for name, value in attributes.items():
            setattr(self, name, value)


class ProgramError(Error):
    """The program does not parse, is ill-typed, or cannot be differentiated.

    Attributes: ``kind`` ("syntax error", "type error", "unsupported", "usage error"),
    ``line`` and ``column`` (1-based; None for an error about the whole program, such as
    a missing entry point) and ``detail`` (the message without its position).
    """

    def __init__(self, message, kind=None, line=None, column=None, detail=None):
        super().__init__(message, kind=kind, line=line, column=column, detail=detail)


class ArgumentError(Error):
    """The arguments do not fit the parameters: their number, a type, a shape, a size,
    a dtype that cannot be read as reals; or a request that does not fit the program
    (``wrt`` naming no parameter, an unknown stage or size).

    Attribute: ``parameter``, the name of the parameter at fault (None when the error is
    not about one parameter, e.g. the number of arguments).
    """

    def __init__(self, message, parameter=None):
        super().__init__(message, parameter=parameter)


class InternalError(Error):
    """A bug of unfad, reported instead of crashing. Please report it."""
