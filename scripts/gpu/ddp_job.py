#!/usr/bin/env python3
"""A small PyTorch DDP training job for scripts/gpu-check.sh.

Run under torchrun with every rank on the same GPU (cuda:0). Faults are injected from the
training script only, the way a user could reproduce them:

  --fault straggler:rank=R,step=N,ms=M   rank R sleeps M ms before its backward from step N on
  --fault nan:rank=R,step=N              DDP comm hook: after the bucket AllReduce of step N, rank
                                         R's bucket gets +Inf in element 0 (its parameters become
                                         non-finite, its next gradients carry NaN: NaN origin)
  --fault sdc:rank=R,step=N              DDP comm hook: one mantissa bit flipped in rank R's bucket
                                         after the AllReduce of step N (post-collective corruption
                                         of one rank's copy; output consensus cannot see it)
  --fault skip:rank=R,step=N             rank R skips the loss AllReduce of step N (the others
                                         block in it: a hang whose root is R)

The multi-rank-per-GPU method is chosen by the caller's environment:
  --hostid   each rank sets NCCL_HOSTID=scout-<rank> before init (docs/nccl-notes.md §7.3; NCCL_NET=Socket)
  (otherwise NCCL_MULTI_RANK_GPU_ENABLE=1 is expected in the environment, NCCL >= 2.30)

Writes one JSON line per injected fault to --truth and per-step times to --times (rank 0).
"""
import argparse
import json
import os
import sys
import time


def parse_fault(spec):
    if not spec:
        return None
    kind, _, rest = spec.partition(":")
    f = {"kind": kind, "rank": -1, "step": 0, "ms": 0}
    for kv in filter(None, rest.split(",")):
        k, _, v = kv.partition("=")
        f[k] = int(v)
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--bucket-mb", type=float, default=4.0)
    ap.add_argument("--fault", default="")
    ap.add_argument("--truth", default="")
    ap.add_argument("--times", default="")
    ap.add_argument("--hostid", action="store_true")
    args = ap.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if args.hostid:
        os.environ["NCCL_HOSTID"] = f"scout-gpu-check-{rank}"
        os.environ.setdefault("NCCL_NET", "Socket")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    fault = parse_fault(args.fault)
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(1234)  # same initial model on every rank

    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, 16)).to(dev)
    ddp = DDP(model, device_ids=[0], bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    state = {"step": 0}

    def truth(kind, extra):
        if not args.truth:
            return
        rec = {"kind": kind, "global_rank": rank, "step": state["step"], "time_ns": time.time_ns()}
        rec.update(extra)
        with open(args.truth, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def hook(_, bucket):
        t = bucket.buffer()
        t.div_(world)
        fut = dist.all_reduce(t, async_op=True).get_future()

        def after(f):
            out = f.value()[0]
            if fault and fault["rank"] == rank and state["step"] == fault["step"] and bucket.index() == 0:
                if fault["kind"] == "nan":
                    out[0] = float("inf")
                    truth("nan", {"note": "+Inf written into bucket 0 after AllReduce"})
                elif fault["kind"] == "sdc":
                    out.view(torch.int32)[0] ^= (1 << 12)
                    truth("sdc", {"note": "mantissa bit 12 of element 0 flipped after AllReduce"})
            return out

        return fut.then(after)

    ddp.register_comm_hook(None, hook)
    gen = torch.Generator(device=dev)
    gen.manual_seed(rank)
    times = []
    for step in range(args.steps):
        state["step"] = step
        t0 = time.perf_counter()
        x = torch.randn(64, args.width, device=dev, generator=gen)
        loss = ddp(x).float().pow(2).mean()
        if fault and fault["kind"] == "straggler" and rank == fault["rank"] and step >= fault["step"]:
            if step == fault["step"]:
                truth("straggler", {"ms": fault["ms"]})
            time.sleep(fault["ms"] / 1000.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        # A loss AllReduce per step (as logging code does); `skip` leaves it out on one rank.
        if not (fault and fault["kind"] == "skip" and rank == fault["rank"] and step == fault["step"]):
            dist.all_reduce(loss.detach().clone())
        else:
            truth("hang", {"note": "rank skipped the loss AllReduce"})
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)

    if args.times and rank == 0:
        with open(args.times, "w") as f:
            json.dump({"world": world, "steps": args.steps, "step_s": times}, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
