"""The RNN-T loss (Graves 2012) in plain PyTorch: -log P(y | x) summed over every alignment of the lattice.

alpha[t, u] = logaddexp(alpha[t-1, u] + blank[t-1, u], alpha[t, u-1] + emit[t, u-1]). For one frame t the u
recursion is a prefix sum: with a[k] = alpha[t-1, k] + blank[t-1, k] and C[u] = emit[t, 0] + ... + emit[t, u-1],
alpha[t, u] = C[u] + logcumsumexp_k<=u(a[k] - C[k]); so the loop runs over frames only and autograd gives the
gradient.
"""

import torch


def rnnt_loss(logp, labels, frames, label_counts, blank):
    """logp [B, T, U+1, V+1] log-probabilities, labels [B, U], frames [B], label_counts [B]: the mean of the
    utterances' negative log-likelihoods divided by their label counts + 1."""
    B, T, U1, _ = logp.shape
    blank_lp = logp[..., blank]  # [B, T, U+1]
    emit_lp = torch.gather(logp[:, :, :-1, :], 3, labels[:, None, :, None].expand(B, T, U1 - 1, 1))[..., 0]
    zero = torch.zeros(B, T, 1, dtype=logp.dtype)
    cum = torch.cat([zero, torch.cumsum(emit_lp, dim=2)], dim=2)  # C[t, u], [B, T, U+1]
    alpha = cum[:, 0]  # alpha[0, u] = C[0, u]
    alphas = [alpha]
    for t in range(1, T):
        a = alpha + blank_lp[:, t - 1]
        alpha = cum[:, t] + torch.logcumsumexp(a - cum[:, t], dim=1)
        alphas.append(alpha)
    alphas = torch.stack(alphas, dim=1)  # [B, T, U+1]
    b = torch.arange(B)
    last = alphas[b, frames - 1, label_counts] + blank_lp[b, frames - 1, label_counts]
    return -(last / (label_counts + 1).to(last.dtype)).mean()
