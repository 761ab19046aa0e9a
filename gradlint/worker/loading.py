"""Importing the user's module and reaching the target.

A ``function_class`` or ``callable`` target is looked up by its qualified name. A
``call_site`` target is reached by running the code around it with gradcheck replaced by
an interceptor that captures the call's arguments (and aborts the surrounding code).
"""

import importlib
import importlib.util
import inspect
import os
import sys

import torch

from .inputs import fixtures
from .introspect import def_of, method_def, param_names
from .outcome import Captured, Outcome
from .tensors import as_tuple
from .text import exc_text, first_line
from .torch_setup import REAL, gradcheck_refs
from .userframes import realpath


class Loaded(object):
    """What loading found: the callable, its Function class, and call-site arguments."""

    def __init__(self, fn, fclass, names, raw_inputs=None, grad_outputs=None, call_kwargs=None):
        self.fn = fn
        self.fclass = fclass
        self.names = names
        self.raw_inputs = raw_inputs  # the captured call's inputs (call_site), else None
        self.grad_outputs = grad_outputs
        self.call_kwargs = call_kwargs or {}
        self.op = None  # a torch.library custom op (the fn itself), when the target is one

    def with_inputs(self, raw_inputs):
        loaded = Loaded(self.fn, self.fclass, self.names, raw_inputs, self.grad_outputs, self.call_kwargs)
        loaded.op = self.op
        return loaded


class Loader(object):
    def __init__(self, req, result, reporter):
        self.req = req
        self.result = result
        self.reporter = reporter
        self.target = dict(req.get("target") or {})
        self.kind = self.target.get("kind")
        self.path = reporter.path
        self.captured = None
        self.case_index = 0  # which parametrize case reached the call
        self._patched = []

    # -- import -----------------------------------------------------------------------

    def module_name(self):
        """(dotted name, its sys.path entry or None): the request's, or found like pytest does."""
        given = (self.req.get("module") or {}).get("name")
        if given:
            return given, None
        d = os.path.dirname(self.path)
        stem = os.path.splitext(os.path.basename(self.path))[0]
        parts = [] if stem == "__init__" else [stem]
        while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.basename(d).isidentifier() \
                and not any(os.path.isfile(os.path.join(d, m)) for m in ("pyproject.toml", "setup.py", "setup.cfg")):
            parts.insert(0, os.path.basename(d))
            d = os.path.dirname(d)
        if not parts:
            parts = [os.path.basename(os.path.dirname(self.path))]
        return ".".join(parts), d

    def import_module(self):
        name, root = self.module_name()
        if root is not None and root not in sys.path:
            sys.path.insert(0, root)
        if (self.req.get("module") or {}).get("reuse") and self.kind != "call_site":
            module = self.imported(name)
            if module is not None:
                self.result["target"]["module"] = module.__name__
                return module
        if "." not in name and name in sys.modules:
            name = "_gradlint_target_" + name
        self.result["target"]["module"] = name
        try:
            if "." in name:
                importlib.import_module(name.rpartition(".")[0])
                already = sys.modules.get(name)
                if self.kind != "call_site" and already is not None and \
                        realpath(getattr(already, "__file__", None) or "") == realpath(self.path):
                    return already  # the package imported it: one copy, the one its own code calls
            spec = importlib.util.spec_from_file_location(
                name, self.path,
                submodule_search_locations=[os.path.dirname(self.path)]
                if self.path.endswith("__init__.py") else None,
            )
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except Captured:
                pass
        except (Outcome, Captured):
            raise
        except Exception as e:
            oc = self.reporter.user_exception(e, "import", "import of %s" % name)
            if oc.verdict != "missing_dependency":
                oc.summary = "✗ %s while importing %s: %s" % (type(e).__name__, name, first_line(exc_text(e)))
            raise oc
        return module

    def imported(self, name):
        """In-process runs: the module as this process imports it (reused when it already
        is), or None when ``name`` is some other file."""
        module = sys.modules.get(name)
        try:
            if module is None:
                spec = importlib.util.find_spec(name)
                if spec is None or not spec.origin or realpath(spec.origin) != realpath(self.path):
                    return None
                module = importlib.import_module(name)
        except Exception as e:
            oc = self.reporter.user_exception(e, "import", "import of %s" % name)
            oc.summary = "✗ %s while importing %s: %s" % (type(e).__name__, name, first_line(exc_text(e)))
            raise oc
        f = getattr(module, "__file__", None)
        return module if f and realpath(f) == realpath(self.path) else None

    # -- call-site capture --------------------------------------------------------------

    def install_interceptor(self):
        line = self.target.get("line")
        end = self.target.get("end_line") or line
        if not isinstance(line, int):
            raise Outcome("error", "bad_request", "✗ bad request: call_site target needs an integer line")
        self.reporter.call_line = line
        target_file = realpath(self.path)
        loader = self
        real_gc, real_ggc = REAL["gradcheck"], REAL["gradgradcheck"]

        def make(variant, real):
            def interceptor(*args, **kwargs):
                if loader.captured is None:
                    f = sys._getframe(1)
                    depth = 0
                    while f is not None and depth < 8:
                        if realpath(f.f_code.co_filename) == target_file and line <= f.f_lineno <= end:
                            loader.captured = {"variant": variant, "args": args, "kwargs": kwargs,
                                               "line": f.f_lineno}
                            loader.uninstall_interceptor()
                            raise Captured()
                        f = f.f_back
                        depth += 1
                    # another call: it runs for real, but its failure must not stop us from
                    # reaching the call we were asked about
                    try:
                        return real(*args, **kwargs)
                    except REAL["GradcheckError"] as e:
                        caller = sys._getframe(1)
                        loader.result["notes"].append(
                            "another %s call (%s:%d) failed on the way to this one and was let through: %s"
                            % (variant, os.path.basename(caller.f_code.co_filename), caller.f_lineno,
                               first_line(str(e))))
                        return False
                return real(*args, **kwargs)

            interceptor.__name__ = variant
            interceptor.__qualname__ = variant
            interceptor.__wrapped__ = real
            return interceptor

        fakes = {"gradcheck": make("gradcheck", real_gc), "gradgradcheck": make("gradgradcheck", real_ggc)}
        patched = []
        for modname, attr in gradcheck_refs():
            d = getattr(sys.modules.get(modname), "__dict__", None)
            val = d.get(attr) if isinstance(d, dict) else None
            if val is real_gc or val is real_ggc:
                d[attr] = fakes["gradcheck" if val is real_gc else "gradgradcheck"]
                patched.append((d, attr, val))
        self._patched = patched

    def uninstall_interceptor(self):
        for d, attr, val in self._patched:
            d[attr] = val
        self._patched = []

    def call_enclosing(self, module, enclosing, first_case=0):
        parts = enclosing.split(".")
        try:
            obj = module
            for p in parts[:-1]:
                obj = getattr(obj, p)
            owner = obj
            getattr(owner, parts[-1])
        except AttributeError:
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not defined in %s" % (enclosing, os.path.basename(self.path)))
        try:
            bound = self._bind_enclosing(module, owner, parts, enclosing)
        except (Outcome, Captured):
            raise
        except Exception as e:
            raise self.reporter.user_exception(e, "setup", "setting up %s" % enclosing)
        needs = _required_params(bound)
        cases = list(self._cases(module, needs, enclosing)) if needs else [{}]
        if not cases:
            raise Outcome(
                "no_inputs", None,
                "cannot call `%s(%s)`: it takes parameters that are not parametrize cases or fixtures of "
                "this module; declare inputs with `# gradlint: inputs=...`"
                % (parts[-1] if len(parts) == 1 else enclosing, ", ".join(needs)))
        first_error = None
        for index, kwargs in enumerate(cases):
            if index < first_case:
                continue
            try:
                if inspect.iscoroutinefunction(bound):
                    import asyncio

                    asyncio.run(bound(**kwargs))
                else:
                    bound(**kwargs)
            except Captured:
                self.case_index = index
                shown = self._case_names()
                if shown:
                    self.result["target"]["case"] = dict((k, _short_repr(v)) for k, v in kwargs.items() if k in shown)
                return
            except Outcome:
                raise
            except BaseException as e:  # pytest.skip() raises a BaseException: try the next case
                if isinstance(e, (KeyboardInterrupt, SystemExit)) and not kwargs:
                    raise
                first_error = first_error or e
        if first_error is not None and isinstance(first_error, Exception):
            raise self.reporter.user_exception(first_error, "enclosing", enclosing)

    def _case_names(self):
        return set(n for names, _source in self.target.get("parametrize") or [] for n in names)

    def _cases(self, module, needs, enclosing):
        """Keyword arguments for a parametrized test: its cases (and same-module fixtures)."""
        import itertools

        grids = []
        for names, source in self.target.get("parametrize") or []:
            try:
                values = eval(compile(source, "<parametrize of %s>" % enclosing, "eval"), dict(vars(module)))
                rows = []
                for value in values:
                    if hasattr(value, "marks") and hasattr(value, "values"):  # pytest.param(...)
                        rows.append(dict(zip(names, tuple(value.values))))
                    elif len(names) == 1:
                        rows.append({names[0]: value})
                    else:
                        rows.append(dict(zip(names, value)))
            except Exception:
                return
            grids.append(rows)
        roots = [p for p in (self.req.get("user_roots") or []) + (self.req.get("sys_path") or []) if p]
        root = roots[0] if roots else os.path.dirname(self.path)
        for combo in itertools.islice(itertools.product(*grids), 32):
            kwargs = {}
            for part in combo:
                kwargs.update(part)
            missing = [n for n in needs if n not in kwargs]
            # fixtures of the project's own making: this module's, then its conftest.py files'
            found = fixtures.cases([module] + fixtures.conftests(self.path, root), missing) if missing else [{}]
            if found is None:
                return
            for values in found:
                merged = dict(kwargs, **values)
                yield dict((k, v) for k, v in merged.items() if k in needs)

    def _bind_enclosing(self, module, owner, parts, enclosing):
        if owner is module:
            return getattr(module, parts[-1])
        if not isinstance(owner, type):
            return getattr(owner, parts[-1])
        import unittest

        if issubclass(owner, unittest.TestCase):
            owner.setUpClass()
            inst = owner(parts[-1])
            inst.setUp()
        else:
            needs = _required_params(owner)
            if needs:
                raise Outcome(
                    "no_inputs", None,
                    "cannot create `%s(%s)` to call `%s`: it takes parameters; declare inputs with "
                    "`# gradlint: inputs=...`" % (owner.__name__, ", ".join(needs), enclosing))
            inst = owner()
        return getattr(inst, parts[-1])

    # -- the target -------------------------------------------------------------------

    def resolve(self, module, qualname):
        if ".<locals>." in qualname:
            return self._from_factory(module, qualname)
        obj = module
        try:
            for p in qualname.split("."):
                obj = getattr(obj, p)
        except AttributeError:
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not defined in %s" % (qualname, os.path.basename(self.path)))
        return obj

    def _from_factory(self, module, qualname):
        """A Function class defined inside a module-level function that returns it (or its
        ``apply``): the function is called with its defaults, and the class it defines while it
        runs is the target (caught as torch's Function metaclass makes it, whatever the function
        returns)."""
        factory_name, _, rest = qualname.partition(".<locals>.")
        factory = getattr(module, factory_name, None)
        if not callable(factory) or "." in rest:
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not defined in %s" % (qualname, os.path.basename(self.path)))
        needs = _required_params(factory)
        if needs:
            raise Outcome("no_inputs", None, "cannot make `%s`: the function that defines it, `%s`, needs %s (a "
                                             "Function a factory makes is run with the factory's defaults)"
                          % (rest, factory_name, ", ".join("`%s`" % n for n in needs)))
        meta = type(torch.autograd.Function)
        made = []
        original = meta.__init__

        def recording(cls, *args, **kwargs):
            original(cls, *args, **kwargs)
            made.append(cls)

        meta.__init__ = recording
        try:
            factory()
        finally:
            meta.__init__ = original
        found = [c for c in made if getattr(c, "__qualname__", None) == qualname]
        if not found:
            raise Outcome("error", "target_not_found",
                          "✗ `%s()` did not define `%s` when called with its defaults" % (factory_name, rest))
        self.result["notes"].append("`%s` is made by `%s()`, called with its defaults" % (rest, factory_name))
        return found[-1]

    def load(self):
        """Import the module and reach the target: a Loaded."""
        if self.kind == "call_site":
            self.install_interceptor()
        try:
            module = self.import_module()
            self.module = module
            if self.kind == "call_site":
                return self._load_call_site(module)
            return self._load_named(module)
        finally:
            self.uninstall_interceptor()

    def _load_call_site(self, module):
        t = self.result["target"]
        enclosing = self.target.get("enclosing")
        if self.captured is None and enclosing:
            self.call_enclosing(module, enclosing)
        self.uninstall_interceptor()
        if self.captured is None:
            where = ("`%s()`" % enclosing) if enclosing else ("importing %s" % os.path.basename(self.path))
            hint = "" if enclosing else (
                " (is it inside a function, or under `if __name__ == \"__main__\":`? name the enclosing "
                "function or declare inputs with `# gradlint: inputs=...`)")
            raise Outcome("no_inputs", None,
                          "the gradcheck call at line %s was not reached while running %s%s"
                          % (self.target.get("line"), where, hint))
        loaded = self._captured_call()
        self._check_subject(loaded)
        t["variant"] = self.captured["variant"]
        t["line_reached"] = self.captured["line"]
        if loaded.fclass is not None:
            t["function_class"] = loaded.fclass.__qualname__
            t["function_file"] = _source_file(loaded.fclass)  # the one report per bug: which Function
        return loaded

    def _check_subject(self, loaded):
        """A call borrowed for a Function's inputs must check that Function, not another class
        of the same name in another module (a copy, a vendored version): else no inputs here."""
        wanted = self.target.get("checks")
        if not isinstance(wanted, dict) or not wanted.get("file"):
            return
        subject = loaded.fclass if loaded.fclass is not None else getattr(loaded.fn, "__wrapped__", loaded.fn)
        name = getattr(subject, "__qualname__", None)
        if name != wanted.get("qualname"):
            return  # a lambda or a wrapper around it: cannot tell, use the call
        try:
            source = inspect.getsourcefile(subject)
        except TypeError:
            return
        if source and os.path.realpath(source) != os.path.realpath(wanted["file"]):
            raise Outcome("no_inputs", None, "the gradcheck call at line %s checks `%s` from %s, not this one"
                          % (self.target.get("line"), name, os.path.basename(source)))

    def _captured_call(self):
        """The captured call's function, inputs and options, as a Loaded."""
        cap = self.captured
        real = REAL[cap["variant"]]
        try:
            bound = inspect.signature(real).bind(*cap["args"], **cap["kwargs"])
        except TypeError as e:
            raise Outcome("error", "exception", "✗ the call raises TypeError: %s" % e, str(e),
                          location=self.reporter.location_for("call"))
        a = dict(bound.arguments)
        fn = a.pop("func")
        raw_inputs = a.pop("inputs")
        grad_outputs = a.pop("grad_outputs", None)
        fclass = None
        fc = getattr(fn, "__self__", None)
        if isinstance(fc, type) and issubclass(fc, torch.autograd.Function):
            fclass = fc
        return Loaded(fn, fclass, param_names(fn, fclass), as_tuple(raw_inputs), grad_outputs, a)

    def _load_named(self, module):
        t = self.result["target"]
        if self.kind == "custom_op":
            from . import customops

            op = customops.resolve(module, self.target, self.resolve)
            t["op"] = customops.op_name(op)
            self.reporter.op_locations = customops.locations(op, dict(self.target, file=self.path))
            names = [a.name for a in customops.schema(op).arguments if not a.kwarg_only] \
                if customops.schema(op) is not None else []
            loaded = Loaded(op, None, names)
            loaded.op = op
            return loaded
        qualname = self.target.get("qualname")
        if not qualname or not isinstance(qualname, str):
            raise Outcome("error", "bad_request", "✗ bad request: target.qualname is missing")
        obj = self.resolve(module, qualname)
        fclass = None
        if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
            fclass = obj
            fn = obj.apply
            t["function_class"] = obj.__qualname__
            loc = method_def(obj, "forward")
            if loc:
                t["line"] = loc["line"]
        elif self.kind == "function_class":
            raise Outcome("error", "target_not_found",
                          "✗ `%s` is not a torch.autograd.Function subclass" % qualname)
        elif callable(obj):
            fn = obj
            loc = def_of(obj)
            if loc:
                t["line"] = loc["line"]
        else:
            raise Outcome("error", "target_not_found", "✗ `%s` is not callable" % qualname)
        return Loaded(fn, fclass, param_names(fn, fclass))

    def recapture(self, seed, case=None):
        """The call's inputs drawn again with another seed, or from a later parametrize case
        (None when the call cannot be reached again: a module-level call would need a fresh
        import, and a test without more cases has no next case)."""
        enclosing = self.target.get("enclosing")
        if self.kind != "call_site" or not enclosing:
            return None
        self.captured = None
        self.install_interceptor()
        try:
            torch.manual_seed(seed)
            self.call_enclosing(self.module, enclosing, self.case_index if case is None else case)
        except Outcome:
            return None
        finally:
            self.uninstall_interceptor()
        if self.captured is None:
            return None
        return self._captured_call()

    def evaluate(self, source, seed):
        """The value of a declared inputs expression, evaluated in the module's namespace."""
        if not isinstance(source, str):
            raise Outcome("error", "bad_request", "✗ bad request: inputs.source must be a string")
        ns = dict(vars(self.module))
        ns.setdefault("torch", torch)
        torch.manual_seed(seed)
        try:
            return eval(compile(source, "<gradlint inputs>", "eval"), ns)
        except SyntaxError as e:
            raise Outcome("error", "bad_request", "✗ the inputs expression is not valid Python: %s" % e.msg)
        except Exception as e:
            raise self.reporter.user_exception(e, "inputs", "the inputs expression")


def _source_file(obj):
    try:
        path = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        return None
    return realpath(path) if path else None


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _required_params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
