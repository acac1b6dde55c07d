"""An independent, plain-PyTorch reference of the PPO pieces StarPO trains with: the clipped policy loss, the clipped
value loss and GAE. The tfjs versions (src/starpo/losses.ts, src/starpo/advantages.ts) are checked against it.

Written from veRL's definitions as RAGEN runs them (core_algos.compute_policy_loss with clip-higher and dual clip,
compute_value_loss, compute_gae_advantage_return, masked_whiten), not from our TypeScript, in the most literal form:
  ratio      = exp(clamp(logp - logp_old, -20, 20))
  pg_loss    = agg(where(A < 0, min(-A * c, L), L)),  L = max(-A * ratio, -A * clamp(ratio, 1 - eps_low, 1 + eps_high))
  clipfrac   = masked mean of [clipped term > unclipped term]; clipfrac_lower = masked mean of [L > -A * c and A < 0]
  ppo_kl     = masked mean of (logp_old - logp)
  vf_loss    = 0.5 * agg(max((V - R)^2, (clamp(V, V_old - cr, V_old + cr) - R)^2))
  GAE        = the backward recursion delta_t = r_t + gamma V_{t+1} - V_t, A_t = delta_t + gamma lam A_{t+1}, with
               rewards and values zero outside the response mask (veRL multiplies the critic's values by it), then
               returns = A + V and the advantages whitened over all masked tokens (unbiased variance, eps 1e-8).
Aggregation modes (veRL agg_loss): token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm
(divided by the padded length T).
"""
import torch

LOG_RATIO_LIMIT = 20.0


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum()


def agg_loss(mat, mask, mode):
    if mode == "token-mean":
        return masked_mean(mat, mask)
    if mode == "seq-mean-token-sum":
        return (mat * mask).sum(dim=-1).mean()
    if mode == "seq-mean-token-mean":
        return ((mat * mask).sum(dim=-1) / mask.sum(dim=-1)).mean()
    if mode == "seq-mean-token-sum-norm":
        return (mat * mask).sum() / mat.shape[-1]
    raise ValueError(f"unknown loss_agg_mode {mode}")


def policy_loss(log_prob, old_log_prob, advantages, mask, clip_low, clip_high, clip_c, agg_mode):
    """Returns pg_loss, pg_clipfrac, pg_clipfrac_lower, ppo_kl."""
    neg_kl = torch.clamp(log_prob - old_log_prob, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(neg_kl)
    ppo_kl = masked_mean(-neg_kl, mask)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    clip_loss = torch.maximum(unclipped, clipped)
    clipfrac = masked_mean(torch.gt(clipped, unclipped).float(), mask)
    dual_cap = -advantages * clip_c
    clipfrac_lower = masked_mean((torch.gt(clip_loss, dual_cap) & (advantages < 0)).float(), mask)
    per_token = torch.where(advantages < 0, torch.minimum(dual_cap, clip_loss), clip_loss)
    return agg_loss(per_token, mask, agg_mode), clipfrac, clipfrac_lower, ppo_kl


def value_loss(values, old_values, returns, mask, clip_range, agg_mode="token-mean"):
    """Returns vf_loss, vf_clipfrac."""
    clipped_values = torch.clamp(values, old_values - clip_range, old_values + clip_range)
    err = (values - returns) ** 2
    err_clipped = (clipped_values - returns) ** 2
    loss = 0.5 * agg_loss(torch.maximum(err, err_clipped), mask, agg_mode)
    return loss, masked_mean(torch.gt(err_clipped, err).float(), mask)


def masked_whiten(x, mask, eps=1e-8):
    mean = masked_mean(x, mask)
    n = mask.sum()
    var = masked_mean((x - mean) ** 2, mask) * n / (n - 1)
    return (x - mean) * torch.rsqrt(var + eps)


def gae(rewards, values, mask, gamma, lam):
    """Returns advantages, returns and whitened advantages, each zero outside the mask."""
    rewards = rewards * mask
    values = values * mask
    steps = rewards.shape[1]
    last = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
    reversed_adv = []
    for t in reversed(range(steps)):
        next_value = values[:, t + 1] if t < steps - 1 else 0.0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        last = delta + gamma * lam * last
        reversed_adv.append(last)
    advantages = torch.stack(reversed_adv[::-1], dim=1)
    returns = advantages + values
    return advantages * mask, returns * mask, masked_whiten(advantages, mask) * mask
