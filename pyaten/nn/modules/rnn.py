"""Recurrent layers: RNN (tanh or relu), LSTM (optionally projected), GRU, and their cells.

Composed from operators, so autograd comes for free. Each layer and direction projects the
whole input sequence with one matmul (x W_ih^T + b), then loops over the time steps for the
hidden part only. Gate order is PyTorch's: LSTM i, f, g, o; GRU r, z, n with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn import functional as F
from pyaten.nn import init
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]

State = tuple[Tensor, ...]  # (h,) or, for LSTM, (h, c)
Step = Callable[[Tensor, State], State]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _packed_sequence_type() -> type:
    # imported here: pyaten.nn.utils.rnn imports this package while it loads
    from pyaten.nn.utils.rnn import PackedSequence

    return PackedSequence


# ---- one time step of each kind -------------------------------------------------------------

def _hidden_part(x_part: Tensor, h: Tensor, w_hh: Tensor) -> Tensor:
    """x_part + h W_hh^T in one op."""
    return ops.addmm(x_part, h, w_hh.t())


def _simple_step(activation: Callable[[Tensor], Tensor], w_hh: Tensor) -> Step:
    def step(x_part: Tensor, state: State) -> State:
        return (activation(_hidden_part(x_part, state[0], w_hh)),)

    return step


def _lstm_step(w_hh: Tensor, w_hr: Tensor | None) -> Step:
    def step(x_part: Tensor, state: State) -> State:
        h, c = state
        gates = _hidden_part(x_part, h, w_hh)
        size = c.shape[-1]
        in_gate, forget_gate, _, out_gate = ops.sigmoid(gates).chunk(4, -1)
        candidate = ops.tanh(gates.narrow(-1, 2 * size, size))
        c = forget_gate * c + in_gate * candidate
        h = out_gate * ops.tanh(c)
        if w_hr is not None:
            h = ops.matmul(h, w_hr.t())
        return h, c

    return step


def _gru_step(w_hh: Tensor, b_hh: Tensor | None) -> Step:
    def step(x_part: Tensor, state: State) -> State:
        h = state[0]
        size = h.shape[-1]
        h_part = ops.matmul(h, w_hh.t()) if b_hh is None else ops.addmm(b_hh, h, w_hh.t())
        x_rz, x_n = x_part.split([2 * size, size], -1)
        h_rz, h_n = h_part.split([2 * size, size], -1)
        reset, update = ops.sigmoid(x_rz + h_rz).chunk(2, -1)
        new = ops.tanh(x_n + reset * h_n)
        return (new + update * (h - new),)

    return step


# ---- one layer and direction over the whole sequence ----------------------------------------

def _run_direction(
    step: Step, x_parts: list[Tensor], batch_sizes: list[int], initial: State, reverse: bool
) -> tuple[list[Tensor], State]:
    """Run `step` over the time steps (backwards when `reverse`), with `batch_sizes[t]`
    sequences still running at step t (all of them for a padded batch). Returns the outputs in
    time order and the final state of every sequence."""
    if reverse:
        return _run_backwards(step, x_parts, batch_sizes, initial)
    state, done, outputs = initial, [], []
    running = initial[0].shape[0]
    for x_part, size in zip(x_parts, batch_sizes):
        if size < running:  # the last `running - size` sequences have ended: keep their state
            done.append(tuple(s[size:running] for s in state))
            state = tuple(s[:size] for s in state)
            running = size
        state = step(x_part, state)
        outputs.append(state[0])
    if done:
        ended = [state, *reversed(done)]
        state = tuple(ops.cat([part[i] for part in ended], 0) for i in range(len(state)))
    return outputs, state


def _run_backwards(
    step: Step, x_parts: list[Tensor], batch_sizes: list[int], initial: State
) -> tuple[list[Tensor], State]:
    running = batch_sizes[-1]
    full = initial[0].shape[0]
    state = initial if running == full else tuple(s[:running] for s in initial)
    outputs = []
    for x_part, size in zip(reversed(x_parts), reversed(batch_sizes)):
        if size > running:  # sequences that end here start their backward pass here
            state = tuple(ops.cat([s, s0[running:size]], 0) for s, s0 in zip(state, initial))
            running = size
        state = step(x_part, state)
        outputs.append(state[0])
    outputs.reverse()
    return outputs, state


# ---- the multi-layer modules ----------------------------------------------------------------

def _check_constructor(
    input_size: Any, hidden_size: Any, num_layers: int, bias: Any, batch_first: Any,
    dropout: Any, proj_size: int,
) -> None:
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not (
        0 <= dropout <= 1
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if dropout > 0 and num_layers == 1:
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
            f"num_layers={num_layers}",
            stacklevel=4,
        )
    for name, value in (("bias", bias), ("batch_first", batch_first)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, named
    weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (and weight_hr_l{k}
    for a projected LSTM), all initialised from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_constructor(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size
        )
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(self._directions):
                self._add_layer_parameters(layer, direction, device, dtype)
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _output_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _add_layer_parameters(self, layer: int, direction: int, device: Any, dtype: Any) -> None:
        gates = _GATES[self.mode] * self.hidden_size
        layer_input = self.input_size if layer == 0 else self._output_size * self._directions
        shapes = {
            "weight_ih": (gates, layer_input),
            "weight_hh": (gates, self._output_size),
        }
        if self.bias:
            shapes.update(bias_ih=(gates,), bias_hh=(gates,))
        if self.proj_size > 0:
            shapes["weight_hr"] = (self.proj_size, self.hidden_size)
        suffix = "_reverse" if direction == 1 else ""
        names = []
        for stem, shape in shapes.items():
            name = f"{stem}_l{layer}{suffix}"
            setattr(self, name, Parameter(ops.empty(shape, device=device, dtype=dtype)))
            names.append(name)
        self._flat_weights_names.extend(names)
        self._all_weights.append(names)

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: there is no fused weight buffer to compact on the CPU."""

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        parts = [f"{self.input_size}, {self.hidden_size}"]
        if self.proj_size != 0:
            parts.append(f"proj_size={self.proj_size}")
        if self.num_layers != 1:
            parts.append(f"num_layers={self.num_layers}")
        if self.bias is not True:
            parts.append(f"bias={self.bias}")
        if self.batch_first is not False:
            parts.append(f"batch_first={self.batch_first}")
        if self.dropout != 0:
            parts.append(f"dropout={self.dropout}")
        if self.bidirectional is not False:
            parts.append(f"bidirectional={self.bidirectional}")
        return ", ".join(parts)

    # -- checks, as PyTorch words them

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                f"Convert input: input.to({weight_dtype}), or convert model: "
                f"model.to({input.dtype})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.size(-1)}"
            )

    def _mini_batch(self, input: Tensor, batch_sizes: Tensor | None) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        batch = self._mini_batch(input, batch_sizes)
        return (self.num_layers * self._directions, batch, self._output_size)

    def check_hidden_size(
        self,
        hx: Tensor,
        expected_hidden_size: tuple[int, int, int],
        msg: str = "Expected hidden size {}, got {}",
    ) -> None:
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(
        self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None
    ) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    # -- the computation

    def _zeros(self, input: Tensor, batch: int, size: int) -> Tensor:
        shape = (self.num_layers * self._directions, batch, size)
        return ops.zeros(shape, dtype=input.dtype, device=input.device)

    def _make_step(self, weights: dict[str, Tensor | None]) -> Step:
        if self.mode == "LSTM":
            return _lstm_step(weights["weight_hh"], weights["weight_hr"])
        if self.mode == "GRU":
            return _gru_step(weights["weight_hh"], weights["bias_hh"])
        activation = ops.tanh if self.mode == "RNN_TANH" else ops.relu
        return _simple_step(activation, weights["weight_hh"])

    def _layer_weights(self, layer: int, direction: int) -> dict[str, Tensor | None]:
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        stems = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        return {stem: getattr(self, stem + suffix, None) for stem in stems}

    def _input_projection(self, x: Tensor, weights: dict[str, Tensor | None]) -> Tensor:
        """x W_ih^T + b_ih, for every time step at once. Except for GRU (whose b_hn sits
        inside the reset gate's product) b_hh joins here too."""
        bias = weights["bias_ih"]
        if bias is not None and self.mode != "GRU":
            bias = bias + weights["bias_hh"]
        return F.linear(x, weights["weight_ih"], bias)

    def _run(
        self, x: Tensor, hx: State, batch_sizes: list[int] | None
    ) -> tuple[Tensor, State]:
        """The layers over `x`: (T, B, F) padded (batch_sizes None) or (N, F) packed.
        `hx` holds one (L * D, B, H) tensor per state; returns the output and final states."""
        packed = batch_sizes is not None
        steps = batch_sizes if packed else [x.shape[1]] * x.shape[0]
        finals: list[State] = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, True)
            outputs = []
            for direction in range(self._directions):
                weights = self._layer_weights(layer, direction)
                projected = self._input_projection(x, weights)
                parts = list(projected.split(steps, 0)) if packed else list(projected.unbind(0))
                index = layer * self._directions + direction
                initial = tuple(h[index] for h in hx)
                step = self._make_step(weights)
                out, final = _run_direction(step, parts, steps, initial, direction == 1)
                outputs.append(ops.cat(out, 0) if packed else ops.stack(out, 0))
                finals.append(final)
            x = outputs[0] if len(outputs) == 1 else ops.cat(outputs, -1)
        states = tuple(ops.stack([f[i] for f in finals], 0) for i in range(len(hx)))
        return x, states

    def _forward(self, input: Any, hx: Any) -> tuple[Any, Any]:
        """The shared forward of RNN and GRU (one state tensor)."""
        packed_type = _packed_sequence_type()
        if isinstance(input, packed_type):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(data, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
            sizes = [int(n) for n in batch_sizes.tolist()]
            output, (hidden,) = self._run(data, (hx,), sizes)
            packed = packed_type(output, batch_sizes, sorted_indices, unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        if input.dim() not in (2, 3):
            extra = " tensor" if name == "RNN" else ""
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{extra} instead"
            )
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                        "tensor"
                    )
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(
                f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
            )
        if hx is None:
            hx = self._zeros(input, self._mini_batch(input, None), self.hidden_size)
        self.check_forward_args(input, hx, None)
        x = input.transpose(0, 1) if self.batch_first else input
        output, (hidden,) = self._run(x, (hx,), None)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output, hidden = output.squeeze(batch_dim), hidden.squeeze(1)
        return output, hidden


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(modes[self.nonlinearity], *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit: r, z = sigmoid(...), n = tanh(W_in x + b_in + r * (W_hn h +
    b_hn)), h' = (1 - z) * n + z * h."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory; with proj_size > 0 the hidden state is projected by
    weight_hr to proj_size features (the cell state keeps hidden_size)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        batch = self._mini_batch(input, batch_sizes)
        return (self.num_layers * self._directions, batch, self.hidden_size)

    def check_forward_args(  # type: ignore[override]
        self, input: Tensor, hidden: tuple[Tensor, Tensor], batch_sizes: Tensor | None
    ) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(
            hidden[0], self.get_expected_hidden_size(input, batch_sizes),
            "Expected hidden[0] size {}, got {}",
        )
        self.check_hidden_size(
            hidden[1], self.get_expected_cell_size(input, batch_sizes),
            "Expected hidden[1] size {}, got {}",
        )

    def _zero_state(self, input: Tensor, batch: int) -> tuple[Tensor, Tensor]:
        return self._zeros(input, batch, self._output_size), self._zeros(
            input, batch, self.hidden_size
        )

    def forward(
        self, input: Any, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Any, tuple[Tensor, Tensor]]:
        packed_type = _packed_sequence_type()
        if isinstance(input, packed_type):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zero_state(data, int(batch_sizes[0]))
            else:
                hx = self.permute_hidden(tuple(hx), sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
            sizes = [int(n) for n in batch_sizes.tolist()]
            output, hidden = self._run(data, tuple(hx), sizes)
            packed = packed_type(output, batch_sizes, sorted_indices, unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            hx = self._zero_state(input, self._mini_batch(input, None))
        else:
            dims = (hx[0].dim(), hx[1].dim())
            wanted, kind = (3, "batched 3-D") if batched else (2, "unbatched 2-D")
            if dims != (wanted, wanted):
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {wanted}-D but got "
                    f"({dims[0]}-D, {dims[1]}-D) tensors"
                )
            if not batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        x = input.transpose(0, 1) if self.batch_first else input
        output, (h, c) = self._run(x, tuple(hx), None)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output, h, c = output.squeeze(batch_dim), h.squeeze(1), c.squeeze(1)
        return output, (h, c)


# ---- the cells ------------------------------------------------------------------------------

def _check_cell_input(input: Tensor, input_size: int) -> None:
    if input.size(1) != input_size:
        raise RuntimeError(
            f"input has inconsistent input_size: got {input.size(1)} expected {input_size}"
        )


def _check_cell_hidden(input: Tensor, hx: Tensor, hidden_size: int, index: int) -> None:
    if input.size(0) != hx.size(0):
        raise RuntimeError(
            f"Input batch size {input.size(0)} doesn't match hidden{index} batch size "
            f"{hx.size(0)}"
        )
    if hx.size(1) != hidden_size:
        raise RuntimeError(
            f"hidden{index} has inconsistent hidden_size: got {hx.size(1)}, expected "
            f"{hidden_size}"
        )


class RNNCellBase(Module):
    """Parameters weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden),
    bias_ih and bias_hh (chunks * hidden), all from U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        options = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(ops.empty((gates, input_size), **options))
        self.weight_hh = Parameter(ops.empty((gates, hidden_size), **options))
        if bias:
            self.bias_ih = Parameter(ops.empty((gates,), **options))
            self.bias_hh = Parameter(ops.empty((gates,), **options))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _zeros(self, input: Tensor) -> Tensor:
        return ops.zeros(
            (input.size(0), self.hidden_size), dtype=input.dtype, device=input.device
        )

    def _projection(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight_ih, self.bias_ih)

    def _prepare(
        self, name: str, input: Tensor, hx: tuple[Tensor, ...] | None, count: int
    ) -> tuple[Tensor, tuple[Tensor, ...], bool]:
        """Check the ranks (as PyTorch words it for cell `name`), then batch unbatched
        input and states; `count` zero states when hx is None. Sizes are checked later."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for index, value in enumerate(hx or ()):
            if value.dim() not in (1, 2):
                what = "hidden" if count == 1 else f"hx[{index}]"
                raise ValueError(
                    f"{name}: Expected {what} to be 1D or 2D, got {value.dim()}D instead"
                )
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = (self._zeros(input),) * count
        elif not batched:
            hx = tuple(value.unsqueeze(0) for value in hx)
        return input, tuple(hx), batched

    def _check_sizes(self, input: Tensor, hx: tuple[Tensor, ...]) -> None:
        _check_cell_input(input, self.input_size)
        for index, value in enumerate(hx):
            _check_cell_hidden(input, value, self.hidden_size, index)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (hx,), batched = self._prepare("RNNCell", input, None if hx is None else (hx,), 1)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_sizes(input, (hx,))
        activation = ops.tanh if self.nonlinearity == "tanh" else ops.relu
        hidden = _hidden_part(self._projection(input), hx, self.weight_hh)
        if self.bias_hh is not None:
            hidden = hidden + self.bias_hh
        out = activation(hidden)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        input, hx, batched = self._prepare("LSTMCell", input, hx, 2)
        self._check_sizes(input, hx)
        projected = self._projection(input)
        if self.bias_hh is not None:
            projected = projected + self.bias_hh
        h, c = _lstm_step(self.weight_hh, None)(projected, hx)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (hx,), batched = self._prepare("GRUCell", input, None if hx is None else (hx,), 1)
        self._check_sizes(input, (hx,))
        (out,) = _gru_step(self.weight_hh, self.bias_hh)(self._projection(input), (hx,))
        return out if batched else out.squeeze(0)
