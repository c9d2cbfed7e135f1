"""The multi-rank program tests/test_distributed.py starts (2 and 3 ranks, via the launcher or
mpirun): every check runs on every rank, compared with NumPy computed from all ranks' inputs
(each rank can rebuild any rank's input from its seed). Each rank writes `{check: "ok" or the
error}` as JSON to `<argv[1]>.<rank>`.

`python distributed_checks.py OUT [collectives|training|fail]`
"""

from __future__ import annotations

import datetime
import json
import sys
import time
import traceback

import ml_dtypes
import numpy as np

import pyaten
import pyaten.distributed as dist

RESULTS: dict[str, str] = {}
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8",
          "bool", "complex64"]  # fmt: skip
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
# PyTorch's (gloo's) errors for a reduction a dtype cannot take.
INVALID_OP_ERRORS = ("result type Float can't be cast to the desired output type",
                     "with non-integral dtype", "on complex tensors")  # fmt: skip


def check(name):
    def run(fn):
        try:
            fn()
            RESULTS[name] = "ok"
        except Exception:  # recorded for the test to show
            RESULTS[name] = traceback.format_exc()
        return fn

    return run


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def data(rank, dtype, shape, salt=0):
    """Rank `rank`'s input: small values so products and sums stay exact in every dtype."""
    rs = np.random.RandomState(1000 * salt + rank)
    if dtype == "bool":
        return rs.rand(*shape) > 0.5
    if dtype in ("int32", "int64", "int8"):
        return rs.randint(-3, 4, size=shape).astype(dtype)
    if dtype == "uint8":
        return rs.randint(0, 4, size=shape).astype(dtype)
    values = rs.randint(-8, 9, size=shape) / 4.0  # exact in float16 and bfloat16
    if dtype == "complex64":
        values = values + 1j * rs.randint(-8, 9, size=shape) / 4.0
    return values.astype(np_dtype(dtype))


def tensor(array):
    return pyaten.from_numpy(np.ascontiguousarray(array).copy())


def expected_reduce(arrays, dtype, op, world):
    stack = np.stack(arrays)
    if dtype == "bool":
        return {"SUM": stack.any(0), "MAX": stack.any(0), "BOR": stack.any(0),
                "PRODUCT": stack.all(0), "MIN": stack.all(0), "BAND": stack.all(0),
                "BXOR": np.logical_xor.reduce(stack, 0)}[op]  # fmt: skip
    work = stack.astype(np.float32) if dtype in ("float16", "bfloat16") else stack
    out = {"SUM": lambda: work.sum(0), "AVG": lambda: work.sum(0), "PRODUCT": lambda: work.prod(0),
           "MIN": lambda: work.min(0), "MAX": lambda: work.max(0),
           "BAND": lambda: np.bitwise_and.reduce(work, 0),
           "BOR": lambda: np.bitwise_or.reduce(work, 0),
           "BXOR": lambda: np.bitwise_xor.reduce(work, 0)}[op]()  # fmt: skip
    if op == "AVG":
        out = out / world
    return out.astype(stack.dtype)


def valid(dtype, op):
    if dtype in ("bool", "int32", "int64", "int8", "uint8"):
        return op != "AVG"  # PyTorch: "result type Float can't be cast to ... Int"
    if dtype in ("float32", "float64", "float16", "bfloat16", "complex64"):
        return op not in ("BAND", "BOR", "BXOR") and not (dtype == "complex64" and op in
                                                          ("MIN", "MAX"))  # fmt: skip
    return True


def same(got, want, dtype):
    got = got.numpy() if hasattr(got, "numpy") else got
    if dtype in ("float16", "bfloat16"):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)
    elif dtype in ("float32", "float64", "complex64"):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def collectives(rank, world):
    shape = (3, 4)

    @check("all_reduce every op and dtype")
    def _():
        for dtype in DTYPES:
            for op in OPS:
                inputs = [data(r, dtype, shape, salt=OPS.index(op)) for r in range(world)]
                t = tensor(inputs[rank])
                if not valid(dtype, op):
                    try:
                        dist.all_reduce(t, getattr(dist.ReduceOp, op))
                    except (RuntimeError, ValueError) as error:
                        assert any(text in str(error) for text in INVALID_OP_ERRORS), error
                        continue
                    raise AssertionError(f"{op} on {dtype} did not raise")
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                same(t, expected_reduce(inputs, dtype, op, world), dtype)

    @check("all_reduce of a non-contiguous view writes through")
    def _():
        base = tensor(data(rank, "float32", (4, 6)))
        view = base.t()[1:4]
        dist.all_reduce(view)
        want = sum(data(r, "float32", (4, 6)) for r in range(world)).T[1:4]
        same(base.t()[1:4], want, "float32")
        same(base.t()[0], data(rank, "float32", (4, 6)).T[0], "float32")

    @check("reduce, every op, to the last rank")
    def _():
        for dtype in ("float32", "int64", "bool"):
            for op in ("SUM", "MAX", "MIN", "PRODUCT"):
                inputs = [data(r, dtype, shape, 7) for r in range(world)]
                t = tensor(inputs[rank])
                dist.reduce(t, dst=world - 1, op=getattr(dist.ReduceOp, op))
                if rank == world - 1:
                    same(t, expected_reduce(inputs, dtype, op, world), dtype)
                else:
                    same(t, inputs[rank], dtype)

    @check("broadcast every dtype from each rank")
    def _():
        for dtype in DTYPES:
            for src in range(world):
                t = tensor(data(rank, dtype, shape, 3))
                dist.broadcast(t, src=src)
                same(t, data(src, dtype, shape, 3), dtype)

    @check("all_gather, uneven sizes, every dtype")
    def _():
        for dtype in DTYPES:
            outs = [tensor(np.zeros((r + 1, 2), np_dtype(dtype))) for r in range(world)]
            dist.all_gather(outs, tensor(data(rank, dtype, (rank + 1, 2), 4)))
            for r in range(world):
                same(outs[r], data(r, dtype, (r + 1, 2), 4), dtype)

    @check("all_gather_into_tensor")
    def _():
        for dtype in ("float32", "bfloat16", "int8"):
            out = tensor(np.zeros((world * 3, 4), np_dtype(dtype)))
            dist.all_gather_into_tensor(out, tensor(data(rank, dtype, (3, 4), 5)))
            same(out, np.concatenate([data(r, dtype, (3, 4), 5) for r in range(world)]), dtype)

    @check("reduce_scatter, uneven sizes")
    def _():
        for dtype, op in (("float32", "SUM"), ("int32", "MAX"), ("float64", "AVG")):
            inputs = [[data(r, dtype, (i + 1, 3), 10 + i) for i in range(world)]
                      for r in range(world)]  # fmt: skip
            out = tensor(np.zeros((rank + 1, 3), np_dtype(dtype)))
            dist.reduce_scatter(out, [tensor(a) for a in inputs[rank]],
                                op=getattr(dist.ReduceOp, op))  # fmt: skip
            same(out, expected_reduce([inputs[r][rank] for r in range(world)], dtype, op, world),
                 dtype)  # fmt: skip

    @check("reduce_scatter_tensor")
    def _():
        inputs = [data(r, "float32", (world * 2, 3), 6) for r in range(world)]
        out = tensor(np.zeros((2, 3), np.float32))
        dist.reduce_scatter_tensor(out, tensor(inputs[rank]))
        same(out, sum(inputs)[2 * rank:2 * rank + 2], "float32")

    @check("all_to_all, uneven sizes")
    def _():
        for dtype in ("float32", "int64", "bool", "complex64"):
            sent = [data(rank, dtype, (rank + r + 1,), 20 + r) for r in range(world)]
            outs = [tensor(np.zeros((r + rank + 1,), np_dtype(dtype))) for r in range(world)]
            dist.all_to_all(outs, [tensor(a) for a in sent])
            for r in range(world):
                same(outs[r], data(r, dtype, (r + rank + 1,), 20 + rank), dtype)

    @check("all_to_all_single, even and uneven splits")
    def _():
        inputs = [data(r, "float32", (world * 2, 3), 30) for r in range(world)]
        out = tensor(np.zeros((world * 2, 3), np.float32))
        dist.all_to_all_single(out, tensor(inputs[rank]))
        same(out, np.concatenate([inputs[r][2 * rank:2 * rank + 2] for r in range(world)]),
             "float32")  # fmt: skip
        # rank r sends (j + 1) rows to rank j
        rows = [sum(j + 1 for j in range(world))] * world
        inputs = [data(r, "int64", (rows[r], 2), 31) for r in range(world)]
        starts = np.cumsum([0] + [j + 1 for j in range(world)])
        out = tensor(np.zeros(((rank + 1) * world, 2), np.int64))
        dist.all_to_all_single(out, tensor(inputs[rank]), [rank + 1] * world,
                               [j + 1 for j in range(world)])  # fmt: skip
        want = np.concatenate([inputs[r][starts[rank]:starts[rank + 1]] for r in range(world)])
        same(out, want, "int64")

    @check("gather and scatter")
    def _():
        for dtype in ("float32", "float16", "int64"):
            dst = world - 1
            gathered = [tensor(np.zeros(shape, np_dtype(dtype))) for _ in range(world)]
            dist.gather(tensor(data(rank, dtype, shape, 40)),
                        gathered if rank == dst else None, dst=dst)  # fmt: skip
            if rank == dst:
                for r in range(world):
                    same(gathered[r], data(r, dtype, shape, 40), dtype)
            out = tensor(np.zeros(shape, np_dtype(dtype)))
            pieces = [tensor(data(r, dtype, shape, 41)) for r in range(world)]
            dist.scatter(out, pieces if rank == 0 else None, src=0)
            same(out, data(rank, dtype, shape, 41), dtype)

    @check("send, recv, isend, irecv in a ring")
    def _():
        right, left = (rank + 1) % world, (rank - 1) % world
        received = tensor(np.zeros(shape, np.float64))
        work = dist.irecv(received, src=left, tag=5)
        dist.isend(tensor(data(rank, "float64", shape, 50)), dst=right, tag=5).wait()
        work.wait()
        same(received, data(left, "float64", shape, 50), "float64")
        if rank == 0:
            for _ in range(1, world):
                t = tensor(np.zeros(2, np.int32))
                sender = dist.recv(t)
                same(t, np.array([sender, sender * 10], np.int32), "int32")
        else:
            dist.send(tensor(np.array([rank, rank * 10], np.int32)), dst=0)

    @check("async collectives overlap and complete in any order")
    def _():
        ts = [tensor(data(rank, "float32", (1000,), 60 + i)) for i in range(4)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        assert all(isinstance(w, dist.Work) for w in works)
        local = sum(float(t.sum()) for t in ts)  # computing while the data moves
        assert np.isfinite(local)
        for i in reversed(range(4)):
            assert works[i].wait() is True and works[i].is_completed()
            same(ts[i], sum(data(r, "float32", (1000,), 60 + i) for r in range(world)),
                 "float32")  # fmt: skip
        work = dist.broadcast(tensor(np.ones(3)), src=0, async_op=True)
        fut = work.get_future()
        assert isinstance(fut.wait(), list)

    @check("object collectives")
    def _():
        objects = [None] * world
        dist.all_gather_object(objects, {"rank": rank, "list": list(range(rank))})
        assert objects == [{"rank": r, "list": list(range(r))} for r in range(world)]
        listed = [("from", rank), rank * 1.5]
        dist.broadcast_object_list(listed, src=world - 1)
        assert listed == [("from", world - 1), (world - 1) * 1.5]
        out = [None]
        dist.scatter_object_list(out, [f"to {r}" for r in range(world)] if rank == 0 else None,
                                 src=0)  # fmt: skip
        assert out == [f"to {rank}"]
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(rank * 2, gathered, dst=0)
        assert rank != 0 or gathered == [r * 2 for r in range(world)]

    @check("mismatched shapes raise on every rank, then the group still works")
    def _():
        t = tensor(np.ones(rank + 2, np.float32))
        try:
            dist.all_reduce(t)
        except RuntimeError as error:
            assert "disagree" in str(error) and "rank 1" in str(error), error
        else:
            raise AssertionError("no error")
        try:
            dist.broadcast(tensor(np.ones((2, rank + 1))), src=0)
        except RuntimeError:
            pass
        else:
            raise AssertionError("no error")
        try:  # a bad size on one rank only: every rank raises, none hangs
            dist.all_gather([tensor(np.ones(2))] * world, tensor(np.ones(3 if rank == 1 else 2)))
        except RuntimeError as error:
            assert "invalid tensor size at index 1" in str(error), error
        else:
            raise AssertionError("no error")
        t = tensor(np.ones(3, np.float32))
        dist.all_reduce(t)
        same(t, np.full(3, world, np.float32), "float32")

    @check("bad arguments raise PyTorch's errors")
    def _():
        for call, kind, text in (
            (lambda: dist.broadcast(tensor(np.ones(2)), src=world), RuntimeError, "invalid root"),
            (lambda: dist.all_reduce([tensor(np.ones(2))]), TypeError, "Expected parameter"),
            (lambda: dist.send(tensor(np.ones(2)), dst=rank), ValueError, "Invalid destination"),
            (lambda: dist.all_gather([tensor(np.ones(2))] * (world + 1), tensor(np.ones(2))),
             RuntimeError, "invalid output tensor list"),
            (lambda: dist.all_reduce(tensor(np.ones(2, np.complex64)), dist.ReduceOp.MAX),
             ValueError, "does not support RedOpType.MAX on complex tensors"),
            (lambda: dist.init_process_group("gloo"), ValueError, "twice"),
        ):  # fmt: skip
            try:
                call()
            except kind as error:
                assert text in str(error), error
            else:
                raise AssertionError(f"no {kind.__name__} ({text})")

    @check("new_group, ranks and barriers")
    def _():
        assert dist.get_rank() == rank and dist.get_world_size() == world
        members = [0, world - 1]
        group = dist.new_group(members)
        if rank in members:
            t = tensor(np.full(2, rank + 1.0))
            dist.all_reduce(t, group=group)
            same(t, np.full(2, 1.0 + world), "float64")
            assert dist.get_rank(group) == members.index(rank)
            assert dist.get_process_group_ranks(group) == members
            t = tensor(np.full(2, float(rank)))
            dist.broadcast(t, src=world - 1, group=group)
            same(t, np.full(2, world - 1.0), "float64")
        else:
            assert group is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(group) == -1
        dist.barrier()
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)
        assert dist.barrier(async_op=True).wait()

    @check("functional collectives return new tensors")
    def _():
        import pyaten.distributed._functional_collectives as fc

        x = tensor(data(rank, "float32", (world * 2, 3), 70))
        inputs = [data(r, "float32", (world * 2, 3), 70) for r in range(world)]
        same(fc.all_reduce(x, "sum", dist.group.WORLD), sum(inputs), "float32")
        same(x, inputs[rank], "float32")
        same(fc.all_gather_tensor(x, 1, dist.group.WORLD), np.concatenate(inputs, 1), "float32")
        same(fc.reduce_scatter_tensor(x, "sum", 0, dist.group.WORLD),
             sum(inputs)[2 * rank:2 * rank + 2], "float32")  # fmt: skip
        meta = pyaten.empty(world * 2, 3, device="meta")
        assert fc.all_gather_tensor(meta, 0, None).shape == (world * world * 2, 3)
        from pyaten.fx.experimental.proxy_tensor import make_fx

        graph = make_fx(lambda t: fc.all_reduce(t * 2, "sum", dist.group.WORLD))(x)
        targets = [str(n.target) for n in graph.graph.nodes]
        assert "_c10d_functional.all_reduce.default" in targets, targets
        same(graph(x), 2 * sum(inputs), "float32")  # the captured graph runs the collective


def plug_in_device(rank, world):
    import pyaten_openreg  # noqa: F401  (the example plug-in device, extensions/openreg)

    @check("collectives on a plug-in device, staged through host memory")
    def _():
        t = pyaten.from_numpy(data(rank, "float32", (3, 4), 80)).to("openreg")
        dist.all_reduce(t)
        same(t.cpu(), sum(data(r, "float32", (3, 4), 80) for r in range(world)), "float32")
        outs = [pyaten.zeros(2, device="openreg") for _ in range(world)]
        dist.all_gather(outs, pyaten.full((2,), float(rank), device="openreg"))
        for r in range(world):
            same(outs[r].cpu(), np.full(2, float(r), np.float32), "float32")


def training(rank, world):
    from pyaten import nn
    from pyaten.commands.demo import build_model
    from pyaten.distributed.algorithms.ddp_comm_hooks import default_hooks
    from pyaten.nn.parallel import DistributedDataParallel as DDP
    from pyaten.utils.data import DataLoader, DistributedSampler, TensorDataset

    def mlp():
        pyaten.manual_seed(rank)  # DDP must replace these by rank 0's parameters
        return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3))

    def cnn():
        pyaten.manual_seed(rank)
        return build_model(nn)

    def train(model, batches, loss_fn, steps=20):
        opt = pyaten.optim.SGD(model.parameters(), lr=0.05)
        losses = []
        for _ in range(steps):
            for x, y in batches:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses

    def compare(make, x_all, y_all, loss_fn, **ddp_kwargs):
        reference = make()
        with pyaten.no_grad():  # the single process starts from rank 0's parameters too
            state = [p.detach().clone() for p in reference.parameters()]
            for p in state:
                dist.broadcast(p, src=0)
            for p, q in zip(reference.parameters(), state):
                p.copy_(q)
        ref_losses = train(reference, [(x_all, y_all)], loss_fn)
        model = DDP(make(), **ddp_kwargs)
        data_set = TensorDataset(x_all, y_all)
        loader = DataLoader(data_set, batch_size=len(data_set) // world,
                            sampler=DistributedSampler(data_set, shuffle=False))  # fmt: skip
        losses = pyaten.tensor(train(model, loader, loss_fn))
        dist.all_reduce(losses, dist.ReduceOp.AVG)
        np.testing.assert_allclose(losses.numpy(), ref_losses, rtol=2e-5, atol=1e-6)
        for p, q in zip(model.module.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-5,
                                       atol=2e-6)  # fmt: skip
        return model

    pyaten.manual_seed(123)
    x_all, y_all = pyaten.randn(24, 5), pyaten.randn(24, 3)

    @check("DDP MLP 20 steps equals one process on the whole batch")
    def _():
        model = compare(mlp, x_all, y_all, nn.functional.mse_loss, bucket_cap_mb=0.0005)
        assert len(model._buckets) > 1

    @check("DDP with gradient_as_bucket_view")
    def _():
        model = compare(mlp, x_all, y_all, nn.functional.mse_loss, gradient_as_bucket_view=True,
                        static_graph=True)  # fmt: skip
        p = next(model.module.parameters())
        bucket, i = model._where[id(p)]
        assert p.grad.data_ptr() == bucket.view(i).data_ptr()

    @check("DDP demo CNN 20 steps equals one process on the whole batch")
    def _():
        pyaten.manual_seed(7)
        images, labels = pyaten.randn(12, 1, 8, 8), pyaten.randint(0, 10, (12,))
        compare(cnn, images, labels, nn.functional.cross_entropy)

    @check("DDP no_sync accumulates locally, then averages")
    def _():
        model = DDP(mlp())
        pyaten.manual_seed(5)  # the same data on every rank
        x_all, y_all = pyaten.randn(6 * world, 5), pyaten.randn(6 * world, 3)
        chunks = list(zip(x_all.split(2), y_all.split(2)))[rank::world]
        with model.no_sync():
            for x, y in chunks[:2]:
                nn.functional.mse_loss(model(x), y, reduction="sum").backward()
            grad = next(model.module.parameters()).grad.clone()
        x, y = chunks[2]
        nn.functional.mse_loss(model(x), y, reduction="sum").backward()
        reference = mlp()
        for p, q in zip(reference.parameters(), model.module.parameters()):
            p.data.copy_(q.data)
        nn.functional.mse_loss(reference(x_all), y_all, reduction="sum").backward()
        for p, q in zip(model.module.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.grad.numpy() * world, q.grad.numpy(), rtol=1e-4,
                                       atol=1e-5)  # fmt: skip
        # within no_sync the gradient was local only
        ref_local = mlp()
        for p, q in zip(ref_local.parameters(), model.module.parameters()):
            p.data.copy_(q.data)
        for x, y in chunks[:2]:
            nn.functional.mse_loss(ref_local(x), y, reduction="sum").backward()
        np.testing.assert_allclose(grad.numpy(), next(ref_local.parameters()).grad.numpy(),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip

    @check("DDP find_unused_parameters")
    def _():
        class Branches(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b, self.never = nn.Linear(5, 3), nn.Linear(5, 3), nn.Linear(5, 3)

            def forward(self, x, use_b):
                return self.a(x) + (self.b(x) if use_b else 0)

        pyaten.manual_seed(0)
        model = DDP(Branches(), find_unused_parameters=True)
        for _ in range(2):  # a second iteration works: the reduction finished
            model.zero_grad()
            model(x_all[:4], use_b=(rank == 0)).sum().backward()
        assert model.module.never.weight.grad is None
        pyaten.manual_seed(0)
        reference = Branches()
        reference(x_all[:4], True).sum().backward()
        np.testing.assert_allclose(model.module.b.weight.grad.numpy(),
                                   reference.b.weight.grad.numpy() / world, rtol=1e-5)  # fmt: skip
        np.testing.assert_allclose(model.module.a.weight.grad.numpy(),
                                   reference.a.weight.grad.numpy(), rtol=1e-5)  # fmt: skip

    @check("DDP without find_unused_parameters reports the unfinished reduction")
    def _():
        class Skips(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(5, 3), nn.Linear(5, 3)

            def forward(self, x):
                return self.a(x)

        model = DDP(Skips())
        model(x_all[:4]).sum().backward()
        try:
            model(x_all[:4])
        except RuntimeError as error:
            assert "Expected to have finished reduction" in str(error)
        else:
            raise AssertionError("no error")

    @check("DDP comm hooks: allreduce, fp16 and bf16 compression")
    def _():
        for hook, tol in ((default_hooks.allreduce_hook, 1e-5),
                          (default_hooks.fp16_compress_hook, 2e-3),
                          (default_hooks.bf16_compress_hook, 3e-2)):  # fmt: skip
            model = DDP(mlp())
            model.register_comm_hook(None, hook)
            x, y = x_all.chunk(world)[rank], y_all.chunk(world)[rank]
            nn.functional.mse_loss(model(x), y).backward()
            reference = mlp()
            for p, q in zip(reference.parameters(), model.module.parameters()):
                p.data.copy_(q.data)
            nn.functional.mse_loss(reference(x_all), y_all).backward()
            for p, q in zip(model.module.parameters(), reference.parameters()):
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=tol, atol=tol)

    @check("SyncBatchNorm equals BatchNorm on the whole batch")
    def _():
        pyaten.manual_seed(0)
        x = pyaten.randn(4 * world, 3, 5)
        reference = nn.BatchNorm1d(3)
        with pyaten.no_grad():
            reference.weight.uniform_()
        synced = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3)))[0]
        assert type(synced).__name__ == "SyncBatchNorm"
        with pyaten.no_grad():
            synced.weight.copy_(reference.weight)
        xr = x.clone().requires_grad_()
        yr = reference(xr)
        (yr * yr.detach().cos()).sum().backward()
        xs = x.chunk(world)[rank].clone().requires_grad_()
        ys = synced(xs)
        (ys * ys.detach().cos()).sum().backward()
        mine = slice(4 * rank, 4 * rank + 4)
        np.testing.assert_allclose(ys.detach().numpy(), yr.detach().numpy()[mine], rtol=1e-5,
                                   atol=1e-5)  # fmt: skip
        np.testing.assert_allclose(xs.grad.numpy(), xr.grad.numpy()[mine], rtol=1e-4, atol=1e-5)
        weight_grad = synced.weight.grad.clone()
        dist.all_reduce(weight_grad)
        np.testing.assert_allclose(weight_grad.numpy(), reference.weight.grad.numpy(), rtol=1e-4)
        np.testing.assert_allclose(synced.running_var.numpy(), reference.running_var.numpy(),
                                   rtol=1e-5)  # fmt: skip


def fail(rank, world):
    """Rank 1 skips a collective: rank 0 raises after the timeout; then rank 0 dies of it."""
    if rank == 1:
        time.sleep(120)  # never joins; the job must end long before this
    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))
    except RuntimeError as error:
        print(f"MONITORED: {error}", flush=True)
    start = time.monotonic()
    try:
        dist.all_reduce(tensor(np.ones(4)))
    except RuntimeError as error:
        print(f"RAISED after {time.monotonic() - start:.1f}s: {error}", flush=True)
        raise
    print("NOT RAISED", flush=True)


def main():
    out, mode = sys.argv[1], sys.argv[2]
    timeout = datetime.timedelta(seconds=3 if mode == "fail" else 90)
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    if mode == "fail":
        fail(rank, world)
        return
    for part in mode.split(","):
        {"collectives": collectives, "training": training,
         "device": plug_in_device}[part](rank, world)  # fmt: skip
    with open(f"{out}.{rank}", "w") as f:
        json.dump(RESULTS, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
