"""A LoRA-style model fed token ids as a plain training script (it knows nothing of zfetch): a frozen
embedding whose output the model detaches and makes a leaf that requires grad, so that the reentrant
checkpoint around each layer recomputes and its adapter gets a gradient; ZeRO-3, two optimizer steps of
two micro-steps each.

    ZFETCH_RECORD=DIR torchrun --standalone --nproc_per_node=2 train_frozen_embedding.py

records it (``pip install tools/recorder`` first). On CPU ranks: DS_ACCELERATOR=cpu
CUDA_VISIBLE_DEVICES=''. The written scenario has no ``input_requires_grad`` (token ids never require
grad) and the embedding's call is ``{call: embed, output: leaf}``."""

import torch
import torch.nn as nn
import torch.utils.checkpoint

import deepspeed

# A DeepSpeed source checkout without its C++ sources cannot build the CPU shared-memory op; it only
# serves inference all-reduce, not training collectives.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False

VOCAB, HIDDEN, LAYERS = 64, 16, 3


class Layer(nn.Module):

    def __init__(self):
        super().__init__()
        self.base = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.base.weight.requires_grad_(False)
        self.adapter_A = nn.Linear(HIDDEN, 2, bias=False)
        self.adapter_B = nn.Linear(2, HIDDEN, bias=False)

    def forward(self, x):
        return self.base(x) + self.adapter_B(self.adapter_A(x))


class Model(nn.Module):

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.embed.weight.requires_grad_(False)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))

    def forward(self, ids):
        x = self.embed(ids).detach().requires_grad_()  # a reentrant checkpoint needs an input with grad
        for layer in self.layers:
            x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=True)
        return x


CONFIG = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0},
    "zero_allow_untested_optimizer": True,
    "steps_per_print": 10**9,
}


def main():
    deepspeed.init_distributed()
    rank = torch.distributed.get_rank()
    torch.manual_seed(1234)
    model = Model()
    engine, *_ = deepspeed.initialize(model=model, config=CONFIG,
                                      model_parameters=[p for p in model.parameters() if p.requires_grad])
    for mu in range(2 * CONFIG["gradient_accumulation_steps"]):
        ids = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(10 * rank + mu))
        loss = engine(ids).pow(2).mean()
        engine.backward(loss)
        engine.step()
    print(f"rank {rank}: pass", flush=True)


if __name__ == "__main__":
    main()
