"""A time limit for a piece of the project's code the worker runs while it looks for inputs (a
test, a docstring example, forward on one synthesized input set): ``SIGALRM`` raises ``TooLong``
in it, and a timer already running (pytest-timeout in the user's own process) resumes afterwards.
In a thread other than the main one there is no limit."""

import signal
import threading
import time


class TooLong(BaseException):
    """Raised in a test that runs too long before it calls the target (not an Exception, so the
    test's own ``except Exception`` does not swallow it)."""


class time_limit(object):
    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            def expire(signum, frame):
                raise TooLong()

            self.previous = signal.signal(signal.SIGALRM, expire)
            self.started = time.monotonic()
            # another timer (pytest-timeout in the user's own process) resumes afterwards
            self.outer = signal.setitimer(signal.ITIMER_REAL, max(0.1, self.seconds))
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
            delay, interval = self.outer
            if delay > 0:
                signal.setitimer(signal.ITIMER_REAL, max(0.001, delay - (time.monotonic() - self.started)), interval)
        return False
