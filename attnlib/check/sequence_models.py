"""Exercise checks for notebook 06 (sequence models: embeddings, LSTMs, cross-entropy, the
training loop); see attnlib.check._core.

Shapes: ``B`` batch, ``T`` steps, ``D`` input width, ``d_hid`` hidden size, ``V`` vocabulary,
``Tt`` target length (SOS ... EOS).

The references are PyTorch's own: ``nn.GRUCell`` for the GRU cell, ``F.cross_entropy`` with
``ignore_index`` for the sequence loss (what :func:`attnlib.training.sequence_loss` computes),
and the step of :func:`attnlib.training.train` (``zero_grad``, ``backward``,
``clip_grad_norm_``, ``step``) on all the micro-batches of exercise 6.3 at once (their
test builds that big batch and compares), and ``torch.optim.Adam`` for exercise 6.4. Inputs
come from local ``torch.Generator`` s and models are built inside ``torch.random.fork_rng``, so
a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import adam

from ..i18n import N_, tr
from ..training import sequence_loss
from ._core import Case, Mistake, Verdict, generator, run_check, seeded
from ._reach import own, torch_api

__all__ = ["accumulated_step", "adam_steps", "gru_cell", "sequence_cross_entropy"]


#: Out of reach while exercises 6.1, 6.2 and 6.4 run: what torch already has for each.
GRU_FORBIDDEN = (
    torch_api(
        "nn.GRUCell",
        (nn.GRUCell, "__init__"),
        (nn.GRUCell, "forward"),
        (torch, "gru_cell"),
        hint=N_("compute the gates from the formulas, with the weights you are given"),
    ),
    torch_api("nn.GRU", (nn.GRU, "__init__"), (nn.GRU, "forward"), (torch, "gru")),
)
CROSS_ENTROPY = torch_api(
    "F.cross_entropy",
    (F, "cross_entropy"),
    hint=N_("take log-probabilities with torch.log_softmax, then pick each gold token's entry"),
)
#: F.nll_loss picks each gold token's -log p and averages them: the step exercise 6.2 asks for.
NLL_LOSS = torch_api(
    "F.nll_loss",
    (F, "nll_loss"),
    hint=N_("pick each gold token's log-probability yourself (`.gather`) and average over the real tokens"),
)
ADAM = torch_api(
    "torch.optim.Adam",
    (torch.optim.Adam, "__init__"),
    (torch.optim.Adam, "step"),
    (adam, "adam"),
    (torch.optim._functional, "adam"),
    hint=N_("keep m and v yourself and update them at every step, as the formulas say"),
)


# --- Exercise 6.1: a GRU cell ------------------------------------------------------------
def _reference_gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    with torch.random.fork_rng(devices=[]):  # its random init is overwritten; leave the global seed alone
        cell = nn.GRUCell(weight_ih.shape[1], weight_hh.shape[1])
    with torch.no_grad():
        for name, value in zip(
            ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
            (weight_ih, weight_hh, bias_ih, bias_hh),
            strict=True,
        ):
            getattr(cell, name).copy_(value)
        return cell(x, h)  # (B, d_hid)


def _gru_variant(*, order="rzn", reset="after_bias", mix="torch", candidate=torch.tanh, out="h"):
    """A GRU step with one thing changed: the mistakes of exercise 6.1.

    ``order`` is the row order the step assumes (nn.GRU's is r, z, n); ``reset`` where the
    reset gate acts; ``mix`` which of ``n`` and ``h`` the update gate keeps.
    """

    def step(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
        hidden_size = h.shape[1]
        at = {name: order.index(name) for name in "rzn"}
        from_x = (x @ weight_ih.T + bias_ih).chunk(3, dim=1)  # (B, D) @ (D, 3 d_hid) -> 3 x (B, d_hid)
        from_h = (h @ weight_hh.T + bias_hh).chunk(
            3, dim=1
        )  # (B, d_hid) @ (d_hid, 3 d_hid) -> 3 x (B, d_hid)
        r = torch.sigmoid(from_x[at["r"]] + from_h[at["r"]])
        z = torch.sigmoid(from_x[at["z"]] + from_h[at["z"]])
        rows = slice(at["n"] * hidden_size, (at["n"] + 1) * hidden_size)
        w_hn, b_hn = weight_hh[rows], bias_hh[rows]  # (d_hid, d_hid), (d_hid,)
        x_n = from_x[at["n"]]
        if reset == "after_bias":  # nn.GRU
            n = candidate(x_n + r * (h @ w_hn.T + b_hn))
        elif reset == "before_bias":
            n = candidate(x_n + r * (h @ w_hn.T) + b_hn)
        elif reset == "before_matrix":  # Cho et al. (2014): W (r * h)
            n = candidate(x_n + (r * h) @ w_hn.T + b_hn)
        else:  # no reset gate at all
            n = candidate(x_n + h @ w_hn.T + b_hn)
        if out == "n":
            return n
        return (1 - z) * n + z * h if mix == "torch" else z * n + (1 - z) * h

    return step


def gru_cell(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 6.1: ``student_fn(x, h, weight_ih, weight_hh, bias_ih, bias_hh) -> h_new``.

    ``x`` ``(B, D)``, ``h`` ``(B, d_hid)``, the weights and biases of ``nn.GRUCell(D, d_hid)``
    (``weight_ih`` ``(3 d_hid, D)``, ``weight_hh`` ``(3 d_hid, d_hid)``, biases ``(3 d_hid,)``,
    rows in the order reset ``r``, update ``z``, new ``n``); returns ``h_new`` ``(B, d_hid)`` as
    ``nn.GRUCell`` does.
    """
    gen = generator(61)

    def case(name: str, b: int, d: int, hidden: int, scale: float = 1.0, zero_h: bool = False) -> Case:
        h = torch.zeros(b, hidden) if zero_h else torch.randn(b, hidden, generator=gen)
        return Case(
            name,
            (
                torch.randn(b, d, generator=gen),
                h,
                scale * torch.randn(3 * hidden, d, generator=gen),
                scale * torch.randn(3 * hidden, hidden, generator=gen),
                scale * torch.randn(3 * hidden, generator=gen),
                scale * torch.randn(3 * hidden, generator=gen),
            ),
        )

    cases = [
        case(N_("B=1, D=2, d_hid=2"), 1, 2, 2),
        case(N_("B=3, D=4, d_hid=3"), 3, 4, 3),
        case(N_("B=2, D=3, d_hid=5, larger weights"), 2, 3, 5, scale=2.0),
        case(N_("B=2, D=3, d_hid=4, from h = 0"), 2, 3, 4, zero_h=True),
    ]
    mistakes = [
        Mistake(
            "nn.GRU stacks the rows of its weights as reset r, update z, new n (in that order): the "
            "first d_hid rows belong to r",
            _gru_variant(order="zrn"),
        ),
        Mistake(
            "the rows come in the order r, z, n: the candidate n uses the last d_hid rows",
            _gru_variant(order="rnz"),
        ),
        Mistake(
            "this is the form of Cho et al. (2014), r applied to h before the matrix; nn.GRU multiplies r "
            "with the whole hidden-side term of n, W_hn h + b_hn",
            _gru_variant(reset="before_matrix"),
        ),
        Mistake(
            "close: in nn.GRU the bias b_hn sits inside the product with r: r * (W_hn h + b_hn)",
            _gru_variant(reset="before_bias"),
        ),
        Mistake(
            "z and 1 - z are swapped: z is the share of the OLD state that is kept, "
            "h_new = (1 - z) * n + z * h",
            _gru_variant(mix="swapped"),
        ),
        Mistake(
            "the candidate n uses tanh (values in -1..1), not sigmoid; only r and z are sigmoids",
            _gru_variant(candidate=torch.sigmoid),
        ),
        Mistake("the reset gate r is missing from the candidate n", _gru_variant(reset="none")),
        Mistake(
            "you returned the candidate n; the new state mixes it with the old one through z",
            _gru_variant(out="n"),
        ),
    ]
    return run_check(
        N_("Exercise 6.1 — a GRU cell"),
        student_fn,
        _reference_gru_cell,
        cases,
        mistakes,
        forbidden=GRU_FORBIDDEN,
    )


# --- Exercise 6.2: cross-entropy over a padded batch --------------------------------------
def _reference_loss(logits: torch.Tensor, gold: torch.Tensor, pad_id: int) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), gold.reshape(-1), ignore_index=pad_id)


def _token_nll(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    return -torch.log_softmax(logits, dim=-1).gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, T)


def _loss_cases() -> list[Case]:
    gen = generator(62)

    def padded(b: int, lengths: list[int], v: int, pad_id: int, scale: float = 1.0) -> tuple:
        t = max(lengths)
        real = [i for i in range(v) if i != pad_id]
        gold = torch.tensor(real)[torch.randint(len(real), (b, t), generator=gen)]  # (B, T), no pad yet
        for row, n in enumerate(lengths):
            gold[row, n:] = pad_id
        return scale * torch.randn(b, t, v, generator=gen), gold, pad_id

    return [
        Case("B=1, T=3, V=4, no padding", padded(1, [3], 4, 0)),
        Case("B=2, T=4, V=5, one sequence padded", padded(2, [4, 2], 5, 0)),
        Case("B=3, V=6, lengths 5, 1, 3", padded(3, [5, 1, 3], 6, 0)),
        Case("pad_id=3 (not 0)", padded(2, [3, 1], 5, 3)),
        Case("large logits (a very unlikely gold token)", padded(2, [3, 3], 4, 0, scale=200.0)),
    ]


def sequence_cross_entropy(student_fn: Callable[..., Any]) -> Verdict:
    """Exercise 6.2: ``student_fn(logits, gold, pad_id) -> loss``.

    ``logits`` ``(B, T, V)``, ``gold`` ``(B, T)`` ids with ``pad_id`` after each sequence's
    end; the loss is the mean of ``-log softmax(logits)[gold]`` over the real (non-pad)
    tokens of the whole batch: ``F.cross_entropy(..., ignore_index=pad_id)``.
    """

    def real(gold: torch.Tensor, pad_id: int) -> torch.Tensor:
        return (gold != pad_id).float()  # (B, T)

    mistakes = [
        Mistake(
            "softmax over the vocabulary: the last axis (dim=-1), not the time axis",
            lambda lo, g, p: (
                (-torch.log_softmax(lo, dim=1).gather(-1, g.unsqueeze(-1)).squeeze(-1) * real(g, p)).sum()
                / real(g, p).sum()
            ),
        ),
        Mistake(
            "the padding counts in your mean: leave out every position whose gold token is pad_id "
            "(what ignore_index does)",
            lambda lo, g, p: _token_nll(lo, g).mean(),
        ),
        Mistake(
            "you zeroed the padding terms but still divided by all B * T positions: divide by the "
            "number of real tokens",
            lambda lo, g, p: (_token_nll(lo, g) * real(g, p)).sum() / g.numel(),
        ),
        Mistake(
            "a mean per sequence, then over sequences, weighs a short sequence's tokens more: average "
            "over all real tokens of the batch at once",
            lambda lo, g, p: ((_token_nll(lo, g) * real(g, p)).sum(1) / real(g, p).sum(1)).mean(),
        ),
        Mistake(
            "the loss is a mean, not a sum, over the real tokens",
            lambda lo, g, p: (_token_nll(lo, g) * real(g, p)).sum(),
        ),
        Mistake(
            "the loss is minus the LOG of the gold token's probability",
            lambda lo, g, p: (
                (-torch.softmax(lo, -1).gather(-1, g.unsqueeze(-1)).squeeze(-1) * real(g, p)).sum()
                / real(g, p).sum()
            ),
        ),
        Mistake(
            "logits are not log-probabilities: turn them into log-probabilities first (log_softmax)",
            lambda lo, g, p: (
                (-lo.gather(-1, g.unsqueeze(-1)).squeeze(-1) * real(g, p)).sum() / real(g, p).sum()
            ),
        ),
        Mistake(
            "log(softmax(x)) underflows: a very unlikely token's probability rounds to 0 and its log to "
            "-inf; log_softmax computes the same thing stably",
            lambda lo, g, p: (
                (
                    -torch.log(torch.softmax(lo, -1)).gather(-1, g.unsqueeze(-1)).squeeze(-1) * real(g, p)
                ).nansum()
                / real(g, p).sum()
            ),
        ),
    ]
    return run_check(
        N_("Exercise 6.2 — cross-entropy over a padded batch"),
        student_fn,
        _reference_loss,
        _loss_cases(),
        mistakes,
        forbidden=[own(sequence_loss), CROSS_ENTROPY, NLL_LOSS],
    )


# --- Exercise 6.3: one update from several micro-batches ----------------------------------
class _TinyLM(nn.Module):
    """The next-token model of notebook 06: it reads ``tgt[:, :-1]`` and predicts ``tgt[:, 1:]``."""

    def __init__(self, vocab_size: int = 7, embed: int = 4, hidden: int = 5) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed)
        self.rnn = nn.LSTM(embed, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, vocab_size)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        outputs, _ = self.rnn(self.embedding(tgt[:, :-1]))  # (B, Tt-1, d_hid)
        return self.fc(outputs)  # (B, Tt-1, V)


def _micro_batches(seed: int, groups: tuple[tuple[int, ...], ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One padded ``(src, tgt)`` micro-batch per group of lengths; ``tgt`` = SOS ids EOS PAD..."""
    gen = generator(seed)
    out = []
    for lengths in groups:
        rows = [[1, *torch.randint(3, 7, (n,), generator=gen).tolist(), 2] for n in lengths]
        tgt = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)  # (B, Tt), 0 = PAD
        for i, row in enumerate(rows):
            tgt[i, : len(row)] = torch.tensor(row)
        out.append((tgt[:, 1:-1].clamp(min=3), tgt))  # src: unused by the model, kept for the protocol
    return out


class TwoSteps:
    """What two training steps did: the losses they returned and where the parameters ended.

    Compared with a tolerance; shown as the losses and how far the parameters moved.
    """

    def __init__(self, losses: list[float], before: torch.Tensor, after: torch.Tensor) -> None:
        self.losses = torch.tensor(losses)
        self.after = after
        self.moved = float((after - before).norm())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TwoSteps):
            return NotImplemented
        both_nan = self.losses.isnan() & other.losses.isnan()
        same_losses = bool((both_nan | torch.isclose(self.losses, other.losses, atol=1e-5)).all())
        return same_losses and torch.allclose(self.after, other.after, atol=1e-5, rtol=1e-4)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        losses = ", ".join(f"{v:.4f}" for v in self.losses.tolist())
        return tr("losses {losses}; parameters moved by {moved}").format(
            losses=losses, moved=f"{self.moved:.4f}"
        )


def _run_updates(
    update_fn: Callable[..., Any], seed: int, groups: tuple[tuple[int, ...], ...], clip: float
) -> TwoSteps:
    """Two updates of ``update_fn`` (each from fresh micro-batches) with SGD on a fresh model.

    SGD, not Adam: Adam undoes a constant rescaling of the gradient, so a wrong weighting
    or a missing clip would hardly show after two updates.
    """
    with seeded(seed):
        model = _TinyLM()
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for update in range(2):
        loss = update_fn(model, optimizer, _micro_batches(100 * seed + update, groups), 0, clip)
        losses.append(float("nan") if loss is None else float(loss))
    return TwoSteps(losses, before, torch.cat([p.detach().flatten() for p in model.parameters()]))


def _update_variant(*, zero="once", weight="tokens", step="once", clip_at="once", returns="loss"):
    """The reference update with one thing changed (the defaults are the reference itself).

    ``zero``: once / each (before every backward) / never; ``weight``: tokens (each
    micro-batch's share of the real tokens) / none / batches (1 / number of micro-batches);
    ``step``: once / each (clip and step after every backward); ``clip_at``: once / each / none;
    ``returns``: loss / last (the last micro-batch's loss) / none.
    """

    def update(model, optimizer, micro_batches, pad_id, clip):
        counts = [int((tgt[:, 1:] != pad_id).sum()) for _, tgt in micro_batches]  # real tokens each
        if zero == "once":
            optimizer.zero_grad()
        total = 0.0
        for (src, tgt), n in zip(micro_batches, counts, strict=True):
            if zero == "each":
                optimizer.zero_grad()
            loss = sequence_loss(model(src, tgt), tgt, pad_id)
            share = {"tokens": n / sum(counts), "none": 1.0, "batches": 1 / len(counts)}[weight]
            (loss * share).backward()  # backward() adds into .grad
            total += loss.item() * n / sum(counts)
            if clip_at == "each" or step == "each":  # a step per micro-batch comes with its clip
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            if step == "each":
                optimizer.step()
        if clip_at == "once" and step == "once":
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        if step == "once":
            optimizer.step()
        return {"loss": total, "last": loss.item(), "none": None}[returns]

    return update


def accumulated_step(student_fn: Callable[..., Any]) -> Verdict:
    """Exercise 6.3: ``student_fn(model, optimizer, micro_batches, pad_id, clip) -> loss``.

    ``micro_batches`` is a list of padded ``(src, tgt)`` batches; ``model(src, tgt)`` returns
    logits ``(B, Tt-1, V)`` for ``tgt[:, 1:]``. One update must equal one step of the training
    loop on all the micro-batches together: the loss is the mean over all their real tokens,
    so each micro-batch's mean loss counts in proportion to its real tokens; one clip to norm
    ``clip`` and one ``optimizer.step()`` at the end. Returns the loss of the whole update.
    The check runs two updates on a fresh model and compares the losses and the parameters.
    """

    def wrap(update_fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda seed, groups, clip: _run_updates(update_fn, seed, groups, clip)

    cases = [
        Case("one micro-batch: a plain step", (1, ((3, 1),), 0.1)),
        Case("two micro-batches with as many real tokens", (2, ((2, 2), (3, 1)), 0.1)),
        Case("three micro-batches of different sizes", (3, ((4, 1, 2), (3,), (2, 2)), 0.1)),
        Case("two micro-batches, clip=5.0", (4, ((3,), (1, 4, 2)), 5.0)),
    ]
    weighting = N_(
        "weigh each micro-batch's mean loss by its share of all the real tokens (n_k / N): a sum or an "
        "average of the means gives a token of a small micro-batch more weight than the big batch would"
    )
    slips = [  # (hint, the knob of _update_variant that makes the slip)
        (N_("return the loss of the whole update as a number"), {"returns": "none"}),
        (
            N_(
                "zero_grad() before every backward() throws away the micro-batches before the last: "
                "clear the gradients once, before the first"
            ),
            {"zero": "each"},
        ),
        (
            N_(
                "the second update's gradients were added to the first's: backward() accumulates into "
                ".grad, so clear it with optimizer.zero_grad() at the start of every update"
            ),
            {"zero": "never"},
        ),
        (N_("one update means one optimizer.step(), after the last micro-batch"), {"step": "each"}),
        (weighting, {"weight": "none"}),
        (weighting, {"weight": "batches"}),
        (
            N_("clip once, the whole accumulated gradient, after the last backward() and before step()"),
            {"clip_at": "each"},
        ),
        (
            N_("the step used unclipped gradients: clip_grad_norm_ after the last backward(), before step()"),
            {"clip_at": "none"},
        ),
        (
            N_(
                "the gradient is right, the returned loss is the last micro-batch's: return the loss of the "
                "whole update, the same token-weighted mean"
            ),
            {"returns": "last"},
        ),
    ]
    mistakes = [Mistake(hint, wrap(_update_variant(**knob))) for hint, knob in slips]
    return run_check(
        N_("Exercise 6.3 — one update from several micro-batches"),
        wrap(student_fn),
        wrap(_update_variant()),
        cases,
        mistakes,
    )


# --- Exercise 6.4: Adam, step by step -----------------------------------------------------
def _reference_adam(w, grads, lr, beta1, beta2, eps):
    w = w.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([w], lr=lr, betas=(beta1, beta2), eps=eps)
    for g in grads:
        w.grad = g.clone()  # the gradients are given: no loss needed
        optimizer.step()
    return w.detach()


def _adam_variant(
    *, root=True, corrected=True, eps_at="outside", first_t=1, sign=-1, betas="right", keep=True
):
    """Adam with one thing changed: the mistakes of exercise 6.4 (Kingma & Ba 2015, Algorithm 1)."""

    def run(w, grads, lr, beta1, beta2, eps):
        if betas == "swapped":
            beta1, beta2 = beta2, beta1
        w, m, v = w.clone(), torch.zeros_like(w), torch.zeros_like(w)
        for t, g in enumerate(grads, start=first_t):
            if not keep:  # the running means start afresh at every step
                m, v = torch.zeros_like(w), torch.zeros_like(w)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g**2
            m_hat = m / (1 - beta1**t) if corrected else m
            v_hat = v / (1 - beta2**t) if corrected else v
            scale = v_hat.sqrt() if root else v_hat
            denom = (v_hat + eps).sqrt() if eps_at == "inside" else scale + eps
            w = w + sign * lr * m_hat / denom
        return w

    return run


def _adam_cases() -> list[Case]:
    gen = generator(64)

    def grads(n: int, *shape: int, spread: float = 0.0) -> list[torch.Tensor]:
        return [
            torch.randn(*shape, generator=gen) * 10.0 ** (spread * (2 * k / max(n - 1, 1) - 1))
            for k in range(n)
        ]

    return [
        Case("one parameter, one step", (torch.tensor([0.5]), [torch.tensor([2.0])], 0.1, 0.9, 0.999, 1e-8)),
        Case("4 parameters, 3 steps", (torch.randn(4, generator=gen), grads(3, 4), 0.01, 0.9, 0.999, 1e-8)),
        Case(
            "(2, 3) parameters, 5 steps, gradients from 0.001 to 1000 in size",
            (torch.randn(2, 3, generator=gen), grads(5, 2, 3, spread=3.0), 0.05, 0.9, 0.999, 1e-8),
        ),
        Case(
            "beta1=0.5, beta2=0.9, eps=0.1, 4 steps",
            (torch.randn(3, generator=gen), grads(4, 3), 0.1, 0.5, 0.9, 0.1),
        ),
    ]


def adam_steps(student_fn: Callable[..., Any]) -> Verdict:
    """Exercise 6.4: ``student_fn(w, grads, lr, beta1, beta2, eps) -> w_new``.

    ``w`` a tensor of parameters (any shape), ``grads`` a list of gradients of the same shape,
    one per step; starting from ``m = v = 0``, apply Adam's update for ``t = 1, 2, ...`` and
    return the parameters after the last step: what ``torch.optim.Adam`` computes.
    """
    mistakes = [
        Mistake(
            "divide by the SQUARE ROOT of v_hat (Algorithm 1): v_hat has the units of a squared gradient, "
            "and only its square root makes the step independent of the gradient's size",
            _adam_variant(root=False),
        ),
        Mistake(
            "m and v start at zero, so in the first steps they are too small: divide them by "
            "1 - beta1**t and 1 - beta2**t before the update",
            _adam_variant(corrected=False),
        ),
        Mistake(
            "t counts the steps from 1: with t = 0 the correction 1 - beta**t is 0",
            _adam_variant(first_t=0),
        ),
        Mistake(
            "eps is added after the square root: sqrt(v_hat) + eps, not sqrt(v_hat + eps)",
            _adam_variant(eps_at="inside"),
        ),
        Mistake(
            "the step goes AGAINST the gradient: w - lr * m_hat / (sqrt(v_hat) + eps)",
            _adam_variant(sign=+1),
        ),
        Mistake(
            "beta1 belongs to the running mean of the gradient (m), beta2 to that of its square (v)",
            _adam_variant(betas="swapped"),
        ),
        Mistake(
            "m and v are running means over all the steps so far: set them to zero once, before the "
            "first step, and keep them from one step to the next",
            _adam_variant(keep=False),
        ),
    ]
    return run_check(
        N_("Exercise 6.4 — Adam, step by step"),
        student_fn,
        _reference_adam,
        _adam_cases(),
        mistakes,
        forbidden=[ADAM],
    )
