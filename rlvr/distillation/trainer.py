"""Our typed config -> TRL's ``DistillationConfig``, and the per-row teacher routing override.

TRL's ``DistillationTrainer`` owns the loop: on-policy sampling, buffering, the optimiser,
checkpoints. Two things are ours: each row is scored by the teacher of its ``domain`` (a
mixed batch is split by domain, never by position), and the objective may be M2RL's
sampled-token one: per-token advantage = teacher log-prob - student log-prob of the token the
student sampled, as a policy gradient (one update per batch, so no ratio clipping applies).
TRL's own divergence (``objective=full_vocab``) is the generalized JSD over the whole
next-token distribution; at ``beta=1`` its gradient is this estimator's expectation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from trl import DistillationConfig, DistillationTrainer

from rlvr.config import RunConfig
from rlvr.distillation.teachers import Teacher, completion_token_logprobs, fuse_lm_head
from rlvr.rollouts.stops import stop_at_turn_end
from rlvr.runs.folders import DataIdLog
from rlvr.training.trainer_args import micro_batches, trainer_arguments


def distill_steps(run: RunConfig) -> int:
    return run.distill.max_steps if run.distill.max_steps is not None else run.trainer.max_steps


def build_distill_config(run: RunConfig, output_dir: Path) -> DistillationConfig:
    """The only place our settings become TRL's: one field at a time, nothing implicit."""
    d = run.distill
    micro, accumulation = micro_batches(run, "distill")
    return DistillationConfig(
        **trainer_arguments(run, output_dir, accumulation, kind="distill"),
        max_steps=distill_steps(run),
        per_device_train_batch_size=micro,
        learning_rate=d.learning_rate,
        lr_scheduler_type=d.lr_scheduler_type,
        warmup_steps=d.warmup_steps,
        adam_beta1=d.adam_beta1,
        adam_beta2=d.adam_beta2,
        weight_decay=d.weight_decay,
        max_grad_norm=d.max_grad_norm,
        temperature=d.temperature,
        top_p=d.top_p,
        top_k=0,
        max_completion_length=d.max_completion_length,
        beta=d.beta,
    )


def rows_of(batch: Mapping[str, Any], rows: list[int]) -> dict[str, Any]:
    """The sub-batch of ``rows``: per-row tensors and lists indexed, scalars kept."""
    index = torch.tensor(rows)
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            out[key] = value[index.to(value.device)]
        elif isinstance(value, list):
            out[key] = [value[i] for i in rows]
        else:
            out[key] = value
    return out


class RoutedDistillationTrainer(DistillationTrainer):
    """DistillationTrainer with one teacher per domain, our mixture sampler (``samples_per_prompt``
    completions per prompt), per-domain KL and reward metrics and teacher/generation timing."""

    def __init__(
        self,
        *args: Any,
        teachers: Mapping[str, Teacher],
        objective: str = "sampled_token",
        samples_per_prompt: int = 1,
        sampler_factory: Callable[..., Any] | None = None,
        reward_funcs: list[Callable[..., Any]] = (),
        **kwargs: Any,
    ) -> None:
        self.teachers = dict(teachers)
        self.objective = objective
        self.samples_per_prompt = samples_per_prompt
        self._sampler_factory = sampler_factory
        self._reward_funcs = list(reward_funcs)
        self.generation_seconds = self.teacher_seconds = 0.0
        self._kl_stats: list[torch.Tensor] = []
        super().__init__(*args, teacher_model=None, **kwargs)
        stop_at_turn_end(self)  # a base student's ChatML turns end at a token TRL misses
        if objective == "sampled_token":  # log-probs of sampled tokens: no whole logits
            model = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            fuse_lm_head(model, self.temperature)
        for teacher in {id(t): t for t in self.teachers.values()}.values():
            teacher.prepare(self.accelerator)
        self._teacher_modules = {  # local teachers' models, whose forwards are timed
            id(model) for t in self.teachers.values() if (model := getattr(t, "model", None))
        }
        self.data_id_log = DataIdLog(Path(self.args.output_dir) / "data_ids.jsonl")

    # -- data: the mixture sampler, with samples_per_prompt completions of every prompt
    def _get_train_sampler(self, dataset=None):
        if self._sampler_factory is None:
            return super()._get_train_sampler(dataset)
        batch = self.args.per_device_train_batch_size * self.accelerator.num_processes
        batch *= self.args.gradient_accumulation_steps
        return self._sampler_factory(
            mini_repeat_count=self.samples_per_prompt,
            batch_size=batch // self.samples_per_prompt,
            repeat_count=self.args.gradient_accumulation_steps,
        )

    def _generate(self, prompts):
        start = time.perf_counter()
        try:
            return super()._generate(prompts)
        finally:
            self.generation_seconds += time.perf_counter() - start

    def _generate_and_score_completions(self, inputs):
        if inputs and "id" in inputs[0]:
            self.data_id_log(self.state.global_step + 1, list(dict.fromkeys(str(x["id"]) for x in inputs)))
        output = super()._generate_and_score_completions(inputs)
        output["domain"] = [x["domain"] for x in inputs]  # rides along TRL's shuffle and split
        if self.model.training:
            self._score(inputs, output)
        return output

    def _score(self, inputs: list[dict], output: Mapping[str, Any]) -> None:
        """Verifier rewards per domain (logged only; the teachers alone drive the update)."""
        ids = [
            row[mask.bool()].tolist()
            for row, mask in zip(output["completion_ids"], output["completion_mask"], strict=True)
        ]
        columns = {k: [x.get(k) for x in inputs] for k in ("domain", "verifier", "reference", "id")}
        texts = self.processing_class.batch_decode(ids, skip_special_tokens=True)
        for func in self._reward_funcs:
            func(
                prompts=[x["prompt"] for x in inputs],
                completions=texts,
                completion_ids=ids,
                log_metric=lambda name, value: self._metrics["train"][name].append(value),
                **columns,
            )

    # -- loss: each domain's rows scored by that domain's teacher
    def _compute_loss(self, unwrapped_student, inputs, num_items_in_batch):
        groups: dict[str, list[int]] = {}
        for row, domain in enumerate(inputs["domain"]):
            groups.setdefault(domain, []).append(row)
        if missing := sorted(set(groups) - set(self.teachers)):
            raise RuntimeError(f"rows of domain(s) {missing} have no teacher")
        mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
        denominator = num_items_in_batch if num_items_in_batch is not None else mask.sum()
        if self.objective == "full_vocab":
            return self._full_vocab_loss(unwrapped_student, inputs, denominator, groups)
        return self._sampled_token_loss(unwrapped_student, inputs, mask, denominator, groups)

    def _sampled_token_loss(self, student, inputs, mask, denominator, groups):
        student_lp, entropies = completion_token_logprobs(student, inputs, self.temperature)
        teacher_lp = torch.zeros_like(student_lp)
        for domain, rows in self._teacher_order(groups):
            scored = self._timed(self.teachers[domain].token_logprobs, rows_of(inputs, rows or [0]), self.temperature)
            if rows:  # a sharded teacher with no rows here still ran, for the other ranks
                teacher_lp[torch.tensor(rows, device=student_lp.device)] = scored.to(teacher_lp)
        log_ratio = (student_lp - teacher_lp).detach()  # per-token KL(student || teacher) sample
        loss = (log_ratio * student_lp * mask).sum() / denominator.clamp(min=1)  # = -A * logp
        self._stash_kl(groups, (log_ratio * mask).sum(dim=1), mask.sum(dim=1))
        entropy = (entropies * mask).sum()
        return loss, entropy, mask.sum()

    def _teacher_order(self, groups: Mapping[str, list[int]]) -> list[tuple[str, list[int]]]:
        """The teachers this micro-batch runs, with their rows. A teacher sharded over the ranks
        gathers its weights in every forward, a collective: then every rank runs every teacher,
        in one order, on a stand-in row where it has none of the teacher's domain."""
        if not any(getattr(t, "sharded", False) for t in self.teachers.values()):
            return list(groups.items())
        return [(domain, groups.get(domain, [])) for domain in sorted(self.teachers)]

    def _full_vocab_loss(self, student, inputs, denominator, groups):
        loss = entropy = valid = 0
        per_row_div, per_row_tokens = [], []
        for domain, rows in groups.items():
            self.teacher_model = self.teachers[domain].model  # read by TRL's own loss
            part, ent, n = super()._compute_loss(student, rows_of(inputs, rows), denominator)
            loss, entropy, valid = loss + part, entropy + ent, valid + n
            per_row_div.append(part.detach() * denominator)  # this domain's divergence sum
            per_row_tokens.append(n)
        self._stash_kl(
            {d: [i] for i, d in enumerate(groups)},
            torch.stack(per_row_div),
            torch.stack(per_row_tokens).to(per_row_div[0]),
        )
        return loss, entropy, valid

    def _get_last_hidden_state(self, unwrapped_model, *args, **kwargs):
        if id(unwrapped_model) not in self._teacher_modules:
            return super()._get_last_hidden_state(unwrapped_model, *args, **kwargs)
        return self._timed(super()._get_last_hidden_state, unwrapped_model, *args, **kwargs)

    def _timed(self, fn: Callable[..., torch.Tensor], *args: Any, **kwargs: Any) -> torch.Tensor:
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        if out.is_cuda:
            torch.cuda.synchronize(out.device)  # kernels are async: time the work, not the launch
        self.teacher_seconds += time.perf_counter() - start
        return out

    # -- per-domain KL: summed over ranks after the forward (no collective inside it)
    def _stash_kl(self, groups: Mapping[str, list[int]], sums, tokens) -> None:
        names = sorted(self.teachers)
        stats = torch.zeros(2 * len(names), device=sums.device)
        for domain, rows in groups.items():
            k = names.index(domain)
            stats[k] += sums[rows].sum().float()
            stats[len(names) + k] += tokens[rows].sum().float()
        self._kl_stats.append(stats)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        out = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        names = sorted(self.teachers)
        mode = "train" if self.model.training else "eval"
        for stats in self._kl_stats:
            total = self.accelerator.reduce(stats, reduction="sum")
            for k, domain in enumerate(names):
                tokens = float(total[len(names) + k])
                if tokens > 0:
                    self._metrics[mode][f"{domain}/kl"].append(float(total[k]) / tokens)
                    self._metrics[mode][f"{domain}/kl_tokens"].append(tokens)
        self._kl_stats.clear()
        return out
