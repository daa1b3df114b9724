"""Three model architectures written as plain torch modules, with the module names and forward
structure of their Hugging Face and PEFT counterparts, for ``python3 -m zfetch_record.from_model``:

* ``llama_lora``: a Llama-style decoder (32 layers, hidden 4096) with PEFT-style LoRA on q_proj and
  v_proj (base weights frozen; the LoRA forward reads ``lora_A.weight.dtype`` from outside lora_A,
  as PEFT's ``_cast_input_dtype`` does: issue #8874's access) and reentrant gradient checkpointing
  of each layer, with transformers' ``enable_input_require_grads`` (the frozen embedding's output requires grad);
* ``gpt2_tied``: a GPT-2-style model whose lm_head weight is the token embedding (tied);
* ``mixtral_moe``: Mixtral-style decoder layers whose MLP is a sparse mixture of 8 experts, top-2
  routed (which experts run depends on the data: the scenario is that of the observed batch).

Each factory returns ``(model, inputs)``. Llama and GPT-2 have the real sizes (run them with
``--device meta``); the MoE model is small so that routing runs on CPU.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


class Config:

    def __init__(self, **kw):
        self.__dict__.update(kw)


class RMSNorm(nn.Module):

    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class LoraLinear(nn.Module):
    """PEFT's lora.Linear: base_layer, lora_dropout/lora_A/lora_B as ModuleDicts keyed by adapter."""

    def __init__(self, base, rank, alpha=16):
        super().__init__()
        self.base_layer = base
        self.base_layer.weight.requires_grad_(False)
        self.lora_dropout = nn.ModuleDict({"default": nn.Identity()})
        self.lora_A = nn.ModuleDict({"default": nn.Linear(base.in_features, rank, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(rank, base.out_features, bias=False)})
        self.scaling = alpha / rank

    def forward(self, x):
        result = self.base_layer(x)
        lora_A = self.lora_A["default"]
        lora_B = self.lora_B["default"]
        x = x.to(lora_A.weight.dtype)  # PEFT's _cast_input_dtype: a metadata read from outside lora_A
        return result + lora_B(lora_A(self.lora_dropout["default"](x))) * self.scaling


class LlamaAttention(nn.Module):

    def __init__(self, c):
        super().__init__()
        h, kv = c.hidden_size, c.hidden_size // c.num_heads * c.num_kv_heads
        self.q_proj = nn.Linear(h, h, bias=False)
        self.k_proj = nn.Linear(h, kv, bias=False)
        self.v_proj = nn.Linear(h, kv, bias=False)
        self.o_proj = nn.Linear(h, h, bias=False)
        self.heads, self.kv_heads = c.num_heads, c.num_kv_heads

    def forward(self, x):
        b, t, h = x.shape
        d = h // self.heads
        q = self.q_proj(x).view(b, t, self.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        att = (q @ k.transpose(-1, -2) / math.sqrt(d)).softmax(-1) @ v
        return self.o_proj(att.transpose(1, 2).reshape(b, t, h))


class LlamaMLP(nn.Module):

    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):

    def __init__(self, c, mlp=None):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = mlp or LlamaMLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size)
        self.post_attention_layernorm = RMSNorm(c.hidden_size)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):

    def __init__(self, c, layer=LlamaDecoderLayer):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(layer(c) for _ in range(c.num_layers))
        self.norm = RMSNorm(c.hidden_size)
        self.gradient_checkpointing = c.gradient_checkpointing

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            if self.gradient_checkpointing:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=True)
            else:
                x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):

    def __init__(self, c, layer=LlamaDecoderLayer):
        super().__init__()
        self.config = c
        self.model = LlamaModel(c, layer)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))


def llama_lora():
    c = Config(hidden_size=4096, intermediate_size=11008, num_heads=32, num_kv_heads=32, num_layers=32,
               vocab_size=32000, gradient_checkpointing=True)
    model = LlamaForCausalLM(c)
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in model.model.layers:
        layer.self_attn.q_proj = LoraLinear(layer.self_attn.q_proj, rank=8)
        layer.self_attn.v_proj = LoraLinear(layer.self_attn.v_proj, rank=8)
    enable_input_require_grads(model)
    return model, (torch.randint(0, c.vocab_size, (1, 16)),)


def enable_input_require_grads(model):
    """As transformers' ``PreTrainedModel.enable_input_require_grads`` (which PEFT calls when gradient
    checkpointing is on): the frozen embedding's output is made to require grad, or no input of a
    reentrant checkpoint region requires grad and its LoRA weights never get a gradient."""

    def make_inputs_require_grads(module, inputs, output):
        output.requires_grad_(True)

    return model.model.embed_tokens.register_forward_hook(make_inputs_require_grads)


class GPT2Block(nn.Module):

    def __init__(self, h):
        super().__init__()
        self.ln_1 = nn.LayerNorm(h)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(h, 3 * h)
        self.attn.c_proj = nn.Linear(h, h)
        self.ln_2 = nn.LayerNorm(h)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(h, 4 * h)
        self.mlp.c_proj = nn.Linear(4 * h, h)
        self.heads = 12

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(h, -1)
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).softmax(-1) @ v
        x = x + self.attn.c_proj(att.transpose(1, 2).reshape(b, t, h))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT2LMHeadModel(nn.Module):

    def __init__(self, layers=12, h=768, vocab=50257, positions=1024):
        super().__init__()
        self.config = Config(hidden_size=h)
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(vocab, h)
        self.transformer.wpe = nn.Embedding(positions, h)
        self.transformer.h = nn.ModuleList(GPT2Block(h) for _ in range(layers))
        self.transformer.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as GPT-2's tie_weights()

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def gpt2_tied():
    return GPT2LMHeadModel(), (torch.randint(0, 50257, (1, 16)),)


class MixtralExpert(nn.Module):

    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.w2 = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.w3 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MixtralSparseMoeBlock(nn.Module):

    def __init__(self, c):
        super().__init__()
        self.gate = nn.Linear(c.hidden_size, c.num_experts, bias=False)
        self.experts = nn.ModuleList(MixtralExpert(c) for _ in range(c.num_experts))
        self.top_k = 2

    def forward(self, x):
        b, t, h = x.shape
        flat = x.reshape(-1, h)
        weights, chosen = self.gate(flat).softmax(-1).topk(self.top_k, -1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            if rows.numel() > 0:  # an expert no token chose does not run (its hooks do not fire)
                out = out.index_add(0, rows, expert(flat[rows]) * weights[rows, slot].unsqueeze(-1))
        return out.view(b, t, h)


class MixtralDecoderLayer(LlamaDecoderLayer):

    def __init__(self, c):
        super().__init__(c, mlp=nn.Identity())
        del self.mlp
        self.block_sparse_moe = MixtralSparseMoeBlock(c)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.block_sparse_moe(self.post_attention_layernorm(x))


def mixtral_moe():
    c = Config(hidden_size=64, intermediate_size=128, num_heads=4, num_kv_heads=2, num_layers=2,
               vocab_size=256, num_experts=8, gradient_checkpointing=False)
    return LlamaForCausalLM(c, MixtralDecoderLayer), (torch.randint(0, c.vocab_size, (2, 8)),)
