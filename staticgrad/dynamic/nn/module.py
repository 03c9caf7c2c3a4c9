"""`Module`: PyTorch's `torch.nn.Module`, the base of every layer. Assigning a `Parameter`, a
Module or a registered buffer to an attribute registers it (as PyTorch's `__setattr__` does),
so that `parameters()`, `state_dict()`, `to()`, `train()` and `repr()` find it.

>>> class MLP(nn.Module):                               # doctest: +SKIP
...     def __init__(self):
...         super().__init__()
...         self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 2)
...     def forward(self, x):
...         return self.fc2(F.relu(self.fc1(x)))
>>> [name for name, _ in MLP().named_parameters()]      # doctest: +SKIP
['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
"""

from __future__ import annotations

import collections
from collections import OrderedDict

import numpy as np

from ... import dtypes as _dt
from ..creation import as_tensor
from ..mode import no_grad
from ..tensor import RemovableHandle, Tensor
from .parameter import Parameter

_NO_GPU = ("the dynamic mode runs on the CPU only: it has no GPU backend (graphs run on a GPU "
           "with sg.Session(backend='cuda'))")


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys",
                                               ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict` returns: the keys the module wanted but did not get, and those it
    got but has no place for."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _is_device(value) -> bool:
    return isinstance(value, str) or type(value).__name__ == "device"


def _check_device(device) -> None:
    """'cpu' (or None) is the one device here; any other raises with the reason."""
    if device is None:
        return
    name = str(device)
    if name.split(":")[0] != "cpu":
        raise RuntimeError(f"cannot move to device {name!r}: {_NO_GPU}")


class Module:
    """The base class of layers and models: subclasses set their parameters and submodules as
    attributes in `__init__` (after `super().__init__()`) and define `forward`; calling the
    module runs the forward pre-hooks, `forward`, then the forward hooks."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # -- registering ----------------------------------------------------------------------------
    def _check_new_name(self, name, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a slot for one) under `name`."""
        self._check_new_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (BatchNorm's running_mean); it is in
        `state_dict()` unless `persistent=False`."""
        self._check_new_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (dynamic tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under `name` (what `self.name = module` does)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(dynamic tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name) -> None:
        """Drop `name` from wherever it was registered (or set) before."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):  # asked only when normal lookup fails
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted({*dir(type(self)), *self.__dict__, *self._parameters, *self._buffers,
                       *self._modules})

    # -- walking the tree -------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(name, module) for this module ('') and every submodule, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                sub = f"{prefix}.{name}" if prefix else name
                yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """This module and every submodule."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """(name, module) for each direct child."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """(dotted name, parameter) for each parameter ('fc1.weight'), each once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Every parameter, each once (what an optimizer takes)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        """(dotted name, buffer) for each buffer."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ('' is this module)."""
        module = self
        for item in target.split(".") if target else []:
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    # -- modes and state -----------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, BatchNorm uses batch statistics) here and below."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode: `train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' `.grad`: to None (the default), or to zeros."""
        for param in self.parameters():
            if param._grad is None:
                continue
            if set_to_none:
                param._grad = None
            else:
                param._grad = param._grad.detach()
                with no_grad():
                    param._grad.zero_()

    def apply(self, fn) -> Module:
        """Call `fn(module)` on every submodule, then on this module (to initialize weights)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert) -> Module:
        """Replace each parameter's and buffer's data (and gradient) by `convert` of it."""
        with no_grad():
            for module in self.modules():
                for param in module._parameters.values():
                    if param is None:
                        continue
                    param.data = convert(param.data)
                    if param._grad is not None:
                        param._grad = convert(param._grad)
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = convert(buffer)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Convert floating parameters and buffers to a floating dtype, in place:
        `to(dy.float64)`, `to('cpu')`, `to('cpu', dy.float64)`, `to(tensor)` (its dtype).
        Any device but the CPU raises: the dynamic mode has no GPU backend."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif _is_device(arg):
                device = arg
            elif isinstance(arg, bool):  # non_blocking, positionally
                continue
            else:
                dtype = arg
        _check_device(device)
        if dtype is None:
            return self
        dtype = _dt.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dtype.name}")
        return self._apply_to_tensors(
            lambda t: t.to(dtype) if t.dtype.is_floating else t)

    def cpu(self) -> Module:
        return self

    def cuda(self, device=None) -> Module:
        raise RuntimeError(_NO_GPU)

    def float(self) -> Module:
        return self.to(_dt.float32)

    def double(self) -> Module:
        return self.to(_dt.float64)

    def half(self) -> Module:
        return self.to(_dt.float16)

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name, detached
        (sharing memory with the module) unless `keep_vars`."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from `state_dict` into the parameters and buffers. Returns the
        (missing_keys, unexpected_keys) named tuple; with `strict`, either raises. A shape
        mismatch always raises."""
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        errors = []
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        with no_grad():
            for key, target in own.items():
                if key not in state_dict:
                    continue
                value = as_tensor(state_dict[key]) if isinstance(
                    state_dict[key], Tensor | np.ndarray) else state_dict[key]
                if not isinstance(value, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected '
                                  f"a tensor from checkpoint but received {type(value)}")
                elif value.shape != target.shape:
                    errors.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {target.shape}.")
                elif assign:
                    target.data = value.data
                else:
                    target.copy_(value.to(target.dtype))
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # -- hooks ------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """Call `hook(module, args)` before each forward; a non-None result replaces the
        positional arguments (a single value is wrapped in a tuple)."""
        return RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook) -> RemovableHandle:
        """Call `hook(module, args, output)` after each forward; a non-None result replaces
        the output."""
        return RemovableHandle(self._forward_hooks, hook)

    # -- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """What a layer prints between its parentheses (its sizes and options)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_addindent(repr(module), 2)}"
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
