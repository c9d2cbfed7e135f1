"""L-BFGS, with an optional strong-Wolfe line search (PyTorch's algorithm and state)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pyaten.autograd.grad_mode import enable_grad, no_grad
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten
from pyaten.optim.optimizer import Optimizer, check_lr

__all__ = ["LBFGS"]

Objective = Callable[[list[Tensor], Any, Tensor], tuple[float, Tensor]]


def _cubic_interpolate(
    x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: tuple | None = None
) -> Any:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
    `bounds` (default: the interval between x1 and x2); its middle when there is none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, low), high)
    return (low + high) / 2.0


class _Bracket:
    """The line search's interval: step sizes, losses, gradients, directional derivatives."""

    def __init__(self, t: list, f: list, g: list, gtd: list) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def positions(self) -> tuple[int, int]:
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)

    def set(self, i: int, t: Any, f: Any, g: Tensor, gtd: Any) -> None:
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd


def _strong_wolfe(
    obj_func: Objective,
    x: list[Tensor],
    t: Any,
    d: Tensor,
    f: float,
    g: Tensor,
    gtd: Tensor,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Tensor, Any, int]:
    """A step size along `d` meeting the strong Wolfe conditions: (loss, gradient, t,
    evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    bracket = None
    while ls_iter < max_ls:
        rises = f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev)
        if not rises and abs(gtd_new) <= -c2 * gtd:
            bracket, done = _Bracket([t], [f_new], [g_new], []), True
            break
        if rises or gtd_new >= 0:
            bracket = _Bracket(
                [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            )
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], [])
    assert bracket is not None
    low, high = bracket.positions()
    insuf_progress = False
    while not done and ls_iter < max_ls:
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1],
            bracket.gtd[1],
        )
        t, insuf_progress = _keep_inside(t, bracket.t, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket.f[low]:
            bracket.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = bracket.positions()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:
                bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low],
                            bracket.gtd[low])
            bracket.set(low, t, f_new, g_new.clone(), gtd_new)
    return bracket.f[low], bracket.g[low], bracket.t[low], evals


def _keep_inside(t: Any, points: list, insuf_progress: bool) -> tuple[Any, bool]:
    """Move a trial step that lands too near the bracket's ends (or twice in a row without
    progress) to 10% of the bracket inside it."""
    top, bottom = max(points), min(points)
    eps = 0.1 * (top - bottom)
    if min(top - t, t - bottom) >= eps:
        return t, False
    if insuf_progress or t >= top or t <= bottom:
        t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
        return t, False
    return t, True


class LBFGS(Optimizer):
    """L-BFGS over all parameters as one flat vector; `step(closure)` needs a closure that
    recomputes the loss (and its gradients)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    def _numel(self) -> int:
        return sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)

    def _gather_flat_grad(self) -> Tensor:
        views = []
        for p in self._params:
            view = aten.zeros_like.default(p).view(-1) if p.grad is None else p.grad.view(-1)
            views.append(aten.view_as_real.default(view).view(-1) if view.is_complex() else view)
        return aten.cat.default(views, 0)

    def _add_grad(self, step_size: Any, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            target = aten.view_as_real.default(p) if p.is_complex() else p
            n = target.numel()
            target.add_(update[offset : offset + n].view_as(target), alpha=step_size)
            offset += n

    def _directional_evaluate(
        self, closure: Callable, x: list[Tensor], t: Any, d: Tensor
    ) -> tuple[float, Tensor]:
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to `max_iter` L-BFGS iterations; returns the closure's first loss."""
        with no_grad():
            return self._run(closure)

    def _run(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(state, flat_grad, prev_flat_grad, d.mul(t), group)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            lr = group["lr"]
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -group["tolerance_change"]:
                break
            loss, flat_grad, t, evals, opt_cond = self._move(
                closure, group, d, t, loss, flat_grad, gtd, current_evals, n_iter
            )
            current_evals += evals
            state["func_evals"] += evals
            if (
                n_iter == group["max_iter"]
                or current_evals >= group["max_eval"]
                or opt_cond
                or d.mul(t).abs().max() <= group["tolerance_change"]
                or abs(loss - prev_loss) < group["tolerance_change"]
            ):
                break
        state.update(d=d, t=t, prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _direction(
        self, state: dict, flat_grad: Tensor, prev_flat_grad: Tensor, s: Tensor, group: dict
    ) -> Tensor:
        """Update the curvature history with the last step, then the two-loop recursion's
        approximation of -H @ grad."""
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        y = flat_grad.sub(prev_flat_grad)
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == group["history_size"]:
                for history in (old_dirs, old_stps, ro):
                    history.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * group["history_size"]
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q * state["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    def _move(
        self,
        closure: Callable,
        group: dict,
        d: Tensor,
        t: Any,
        loss: float,
        flat_grad: Tensor,
        gtd: Tensor,
        current_evals: int,
        n_iter: int,
    ) -> tuple[float, Tensor, Any, int, Any]:
        """Step along `d`: by `t`, or where the strong-Wolfe search lands. Returns the new
        loss, gradient, step size, evaluations made, and whether the gradient is small."""
        tolerance_grad, opt_cond, evals = group["tolerance_grad"], False, 0
        if group["line_search_fn"] is not None:
            if group["line_search_fn"] != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            x_init = [p.clone() for p in self._params]

            def obj_func(x: list[Tensor], step: Any, direction: Tensor) -> tuple[float, Tensor]:
                return self._directional_evaluate(closure, x, step, direction)

            loss, flat_grad, t, evals = _strong_wolfe(
                obj_func, x_init, t, d, loss, flat_grad, gtd,
                max_ls=group["max_eval"] - current_evals,
            )
            self._add_grad(t, d)
            opt_cond = flat_grad.abs().max() <= tolerance_grad
        else:
            self._add_grad(t, d)
            if n_iter != group["max_iter"]:
                with enable_grad():
                    loss = float(closure())
                flat_grad = self._gather_flat_grad()
                opt_cond = flat_grad.abs().max() <= tolerance_grad
                evals = 1
        return loss, flat_grad, t, evals, opt_cond
