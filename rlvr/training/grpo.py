"""Our small ``GRPOTrainer`` subclass: mixture sampler, timing, episodes, the lean forward."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

from rlvr.config import ConfigError
from rlvr.data.adaptive import load_mixture_state, save_mixture_state
from rlvr.lean_forward.zero_advantage import rows_with_gradient, skippable
from rlvr.rewards.bridge import bridge_scores
from rlvr.rollouts import unsupported as sampler_unsupported
from rlvr.rollouts.stops import stop_at_turn_end
from rlvr.runs.folders import DataIdLog

logger = logging.getLogger(__name__)


class RLVRGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with our mixture sampler (its weights logged per step as
    ``<domain>/mixture_weight``), generation timing, a log of the prompt ids each step trains
    on (``<output_dir>/data_ids.jsonl``) and, with ``async_generation``, one-step-ahead
    generation on a copy of the policy (``rlvr.rollouts.lookahead``, staleness logged as
    ``async/staleness``). The overrides are the sampler, ``get_batch_samples`` (to see the
    next step's batch), ``_generate_single_turn`` (to serve the batch sampled ahead, to run
    agent rollouts as whole KV-cached episodes, ``rlvr.rollouts.tool_loop``, or to draw single turns
    from the KV-cache sampler, ``kv_sampling``, ``rlvr.rollouts.single_turn``, grading rows
    that end early on a background thread, ``score_ahead``), ``_tool_call_loop`` (to
    hand those episodes over in TRL's shapes), ``_get_per_token_logps_and_entropies`` (the
    log-prob forward in length-sorted chunks cut to their rows' columns, each distinct prompt
    encoded once: ``trim_padding``, ``share_prompts``, ``rlvr.lean_forward.trimmed``) and the checkpoint
    save/load of the batch held ahead."""

    def __init__(
        self,
        *args,
        sampler_factory=None,
        async_generation=False,
        tool_episodes=True,
        kv_sampling=True,
        score_ahead: bool | None = None,
        trim_padding=True,
        share_prompts=True,
        skip_zero_advantage=True,
        **kwargs,
    ):
        self._sampler_factory = sampler_factory
        self.tool_episodes = tool_episodes  # agent rollouts as episodes (rlvr.rollouts.tool_loop)
        self._first_turn = False
        self._rollouts = None  # (prompt ids, episodes) of the batch, for _tool_call_loop
        self._batch_inputs: list | None = None  # the rows being generated for, to score ahead
        self.mixture_sampler = None
        self.generation_seconds = 0.0
        super().__init__(*args, **kwargs)
        stop_at_turn_end(self)  # before the samplers below copy the stops
        self.data_id_log = DataIdLog(Path(self.args.output_dir) / "data_ids.jsonl")
        self.lookahead = self._build_lookahead() if async_generation else None
        self._ahead: list = []  # dataloader batches taken early from ``_ahead_source``
        self._ahead_source = None
        self._next_batch = None  # the next step's generation batch, once seen
        self._lean_forward = self._build_lean_forward(trim_padding, share_prompts)
        self._rows_kept_because = skippable(self) if skip_zero_advantage else "trainer.skip_zero_advantage=false"
        self.skip_zero_advantage = self._rows_kept_because is None
        self.rows_skipped = self.rows_seen = 0
        why = sampler_unsupported(self)
        self.kv_sampling = kv_sampling and why is None
        self._sampler_facts = {  # read now: accelerate's state is reset when training ends
            "sampler": "kv-cache" if self.kv_sampling else "trl",
            **({"trl_sampler_because": why} if kv_sampling and why else {}),
        }
        if score_ahead is None:  # with kv_sampling: grade rows as they end, beside a GPU
            score_ahead = self.accelerator.device.type != "cpu"
        self.score_ahead = score_ahead

    def _build_lean_forward(self, trim: bool, share: bool):
        """The cheaper log-prob forward (``rlvr.lean_forward.trimmed``), or None for TRL's.
        Trimming needs a rotary model. With several processes the ranks agree on a chunk count
        (FSDP's and DDP's collectives need equal forwards) and prompts are not shared: a shared
        prompt's cache ties a chunk's forwards into one graph whose shape depends on the data,
        so ranks could run their backward's gathers in different orders."""
        from rlvr.lean_forward.trimmed import LeanForward, trimmable

        trim = trim and trimmable(self.model)
        most_chunks = None
        if self.accelerator.num_processes > 1:
            if share:
                logger.info(
                    "share_prompts is off with %d processes: trimmed chunks only", self.accelerator.num_processes
                )
            share, most_chunks = False, self._most_over_ranks
        if not (trim or share):
            return None
        return LeanForward(trim, share, self.accelerator.autocast, most_chunks)

    def _most_over_ranks(self, count: int) -> int:
        import torch

        counts = self.accelerator.gather(torch.tensor([count], device=self.accelerator.device))
        return int(counts.max())

    def _get_train_sampler(self, dataset=None):
        if self._sampler_factory is None:
            return super()._get_train_sampler(dataset)
        repeat = self.num_iterations * self.args.steps_per_generation
        self.mixture_sampler = self._sampler_factory(
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=repeat,
            steps_per_batch=max(1, repeat // self.args.gradient_accumulation_steps),
        )
        return self.mixture_sampler

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **inputs,
    ):
        parent = super()._get_per_token_logps_and_entropies
        lean = self._lean_forward
        if lean is None or compute_aux_loss or any(v is not None for v in inputs.values()):
            return parent(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **inputs,
            )
        return lean(model, parent, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy)

    def _compute_loss(self, model, inputs):
        """TRL's loss, on the rows whose advantage is nonzero (``rlvr.lean_forward.zero_advantage``):
        the same loss and gradient without the forward and backward of rows that add nothing."""
        most = self._most_over_ranks if self.accelerator.num_processes > 1 else None
        kept = rows_with_gradient(inputs, self.loss_type, most) if self.skip_zero_advantage else None
        rows = inputs["advantages"].size(0)
        self.rows_seen += rows
        if kept is None:
            return super()._compute_loss(model, inputs)
        self.rows_skipped += rows - kept.rows.numel()
        return super()._compute_loss(model, kept.take(inputs)) * kept.scale

    def _generate_and_score_completions(self, inputs):
        training = self.model.training
        if inputs and "id" in inputs[0]:
            ids = list(dict.fromkeys(str(x["id"]) for x in inputs))
            self.data_id_log(self.state.global_step + 1, ids)
        self._batch_inputs = inputs
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._batch_inputs = None
        if training and self.mixture_sampler is not None:
            step = self.state.global_step
            if self.mixture_sampler.adaptive is not None:
                self._report_learning_signal(step, inputs, output["advantages"])
            for domain, weight in self.mixture_sampler.weights_at_step(step).items():
                self._metrics["train"][f"{domain}/mixture_weight"].append(weight)
        if training and self.lookahead is not None:
            # the ratio is taken against the weights that sampled (one version back when ahead)
            output["old_per_token_logps"] = output["sampling_per_token_logps"]
        return output

    def _report_learning_signal(self, step: int, inputs, advantages) -> None:
        """This batch's per-domain learning signal and reward, summed over the processes (every
        rank's sampler must draw the same next batches), to the adaptive mixture; logged per
        step as ``<domain>/adaptive_signal``, and ``<domain>/adaptive_guard`` (1 while the
        forgetting guard holds the domain at its initial share)."""
        import torch

        from rlvr.data.adaptive import batch_report

        adaptive = self.mixture_sampler.adaptive
        names = adaptive.domains
        local = batch_report(
            [x["domain"] for x in inputs],
            advantages.tolist(),
            adaptive.settings.signal,
            self._batch_rewards(len(inputs)),
        )
        zero = (0.0, 0, 0.0)
        totals = torch.tensor(
            [[local.get(d, zero)[0], local.get(d, zero)[1], local.get(d, zero)[2]] for d in names],
            dtype=torch.float64,
            device=self.accelerator.device,
        )
        totals = self.accelerator.reduce(totals, reduction="sum").cpu().tolist()
        report = {d: (s, int(round(n)), r) for d, (s, n, r) in zip(names, totals, strict=True) if n}
        self.mixture_sampler.observe(step, report)
        for domain, (total, count, _) in report.items():
            self._metrics["train"][f"{domain}/adaptive_signal"].append(total / count)
        guarded = set(adaptive.guarded(step // self.mixture_sampler.steps_per_batch))
        for domain in names:
            self._metrics["train"][f"{domain}/adaptive_guard"].append(float(domain in guarded))

    def _batch_rewards(self, rows: int) -> list[float] | None:
        """Each row's verifier score in the batch just scored (the bridge's verdicts), or None
        where the reward functions are not the bridge's."""
        scores = bridge_scores(self.reward_funcs)
        if scores is None or len(scores.by_row) != rows:
            return None
        return [float(scores.by_row[i][1].score) for i in range(rows)]

    def _generate(self, prompts):
        start = time.perf_counter()
        self._first_turn = True  # the next _generate_single_turn call generates first turns
        try:
            return super()._generate(prompts)
        finally:
            self._first_turn, self._rollouts = False, None
            self.generation_seconds += time.perf_counter() - start

    # -- one-step-ahead generation (trainer.async_generation) --------------------------------
    def _build_lookahead(self):
        from rlvr.rollouts.lookahead import Lookahead, Sampling

        if self.use_vllm or self.top_k or self.min_p or self.repetition_penalty != 1.0:
            raise ConfigError(
                "trainer.async_generation samples with temperature and top-p on a copy of the "
                "policy: it needs trainer.use_vllm=false, top_k=0, no min_p, repetition_penalty=1"
            )
        args = self.args
        sampling = Sampling(
            max_new_tokens=self.max_completion_length,
            temperature=self.temperature,
            top_p=self.top_p,
            eos_token_ids=tuple(self.eos_token_ids),
            pad_token_id=self._tokenizer.pad_token_id,
            seed=args.seed,
            rank=self.accelerator.process_index,
            autocast_dtype="bfloat16" if args.bf16 else "float16" if args.fp16 else None,
        )
        return Lookahead(self.model, sampling)

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """This step's batches, and the next step's taken early so its generation can start."""
        if self.lookahead is None:
            return super().get_batch_samples(epoch_iterator, num_batches, device)
        if epoch_iterator is not self._ahead_source:  # a new pass over the data
            self._ahead, self._ahead_source = [], epoch_iterator
        while len(self._ahead) < 2 * num_batches:
            try:
                self._ahead.append(next(epoch_iterator))
            except StopIteration:
                break
        batches, self._ahead = self._ahead[:num_batches], self._ahead[num_batches:]
        self._next_batch = self._ahead[0] if self._ahead else None
        return batches, self._get_num_items_in_batch(batches, device)

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        first, self._first_turn = self._first_turn, False
        if first and self._runs_episodes():  # whole episodes; _tool_call_loop hands them over
            from rlvr.rollouts.tool_loop import run_rollouts

            rollouts = run_rollouts(self, prompt_ids)
            self._rollouts = (prompt_ids, rollouts)
            return rollouts.first_turns, None
        if self.lookahead is None or not self.model.training:
            if self.kv_sampling and not multimodal_fields and not has_tool_images:
                from rlvr.rollouts.single_turn import sample_completions, scoring_ahead

                inputs = self._batch_inputs
                ahead = scoring_ahead(self, prompt_ids, inputs) if self.score_ahead else None
                return sample_completions(self, prompt_ids, ahead), None
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        step, live = self.state.global_step, self.accelerator.unwrap_model(self.model)
        waited = self.lookahead.stats.wait_s
        rollout = self.lookahead.take(prompt_ids)
        if rollout is None:  # the first batch, the first of a pass, or a resume with none saved
            self.lookahead.sync(live, step)
            rollout = self.lookahead.sample_now(prompt_ids, step)
        metrics = self._metrics["train"]
        metrics["async/staleness"].append(float(self.lookahead.record(rollout, step)))
        metrics["async/wait_s"].append(self.lookahead.stats.wait_s - waited)
        batch, self._next_batch = self._next_batch, None
        if batch is not None and step + 1 < self.state.max_steps:
            self.lookahead.sync(live, step)
            next_ids = self._tokenize_prompts([x["prompt"] for x in batch])[0]
            self.lookahead.submit(next_ids, step + 1)
        return rollout.completion_ids, rollout.logprobs

    # -- agent rollouts as whole episodes (trainer.tool_episodes) ------------------------------
    def _runs_episodes(self) -> bool:
        from rlvr.rollouts.tool_loop import unsupported

        return self.tool_episodes and self.lookahead is None and unsupported(self) is None

    def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, logprobs, *rest):
        held, self._rollouts = self._rollouts, None
        rollouts = held[1] if held is not None and held[0] is prompt_ids else None
        if rollouts is None:  # not this batch's first turns: TRL's own loop
            return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, logprobs, *rest)
        return (
            rollouts.tool_mask,
            rollouts.messages,
            rollouts.completion_ids,
            logprobs,  # None on this path, as for TRL's transformers generation
            rollouts.tool_calls,
            rollouts.tool_failures,
            [[] for _ in prompt_ids],  # no tool images
        )

    def _save_checkpoint(self, model, trial):
        folder = Path(self._get_output_dir(trial=trial)) / (f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        if self.lookahead is not None:
            self.lookahead.save(folder)
        if self.mixture_sampler is not None and self.args.should_save:
            save_mixture_state(self.mixture_sampler, folder, self.state.global_step)
        super()._save_checkpoint(model, trial)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if self.lookahead is not None and checkpoint is not None:
            self.lookahead.load(Path(checkpoint))
        if self.mixture_sampler is not None and checkpoint is not None:
            load_mixture_state(self.mixture_sampler, Path(checkpoint))

    def train(self, *args, **kwargs):
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.lookahead is not None:
                self.lookahead.close()
            if (scores := bridge_scores(self.reward_funcs)) is not None:
                scores.early.close()

    def generation_facts(self) -> dict[str, Any]:
        """For the run summary: which sampler drew the completions (and why TRL's where it
        did), whether generation ran ahead, and its staleness and waits."""
        if self.lookahead is None:
            return {**self._sampler_facts, "async_generation": False}
        return {**self._sampler_facts, "async_generation": True, **self.lookahead.stats.facts()}

    def update_facts(self) -> dict[str, Any]:
        """For the run summary: whether zero-advantage rows left the update (and why not where
        they stayed), and how many of the rows seen did."""
        share = self.rows_skipped / self.rows_seen if self.rows_seen else 0.0
        why = self._rows_kept_because
        return {
            "skip_zero_advantage": self.skip_zero_advantage,
            **({"zero_advantage_kept_because": why} if why else {}),
            "rows": self.rows_seen,
            "rows_skipped": self.rows_skipped,
            "rows_skipped_share": round(share, 4),
        }
