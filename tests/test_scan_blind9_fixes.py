"""False alarms of the ninth and tenth blind scan corpora (benchmarks/scan_blind9, 10), fixed
after each was scored once blind (precision 43 % and 37 %, results-blind.md)."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan import scan_paths
from torchdoctor.scan.engine import ScanOptions, scan_source

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")


def _confidences(src: str, rule: str) -> list[tuple[int, str]]:
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    return [(f.line, f.confidence) for f in found if f.rule == rule]


def test_cuda_in_a_script_is_low_act_imitate_episodes_waveglow_inference():
    """tonyzhaozh/act's imitate_episodes.py and NVIDIA/waveglow's inference.py move everything
    with `.cuda()` and run themselves: 31 of set 9's 37 false findings were such lines, code
    its author runs on the GPU machine it was written for."""
    src = """
    import torch

    def eval_bc(config, ckpt_name):
        policy = make_policy(config)
        policy.cuda()
        qpos = torch.from_numpy(qpos).float().cuda().unsqueeze(0)

    if __name__ == "__main__":
        eval_bc(parse(), "policy_best.ckpt")
    """
    assert _confidences(src, "TD001") == [(6, "low"), (7, "low")]


def test_cuda_in_a_library_function_outside_a_class_is_low_glow_tts_init():
    """jaywalnut310/glow-tts init.py's `x.cuda()` in a module-level training function."""
    src = """
    import torch

    def main(hps):
        for x, x_lengths in loader:
            x, x_lengths = x.cuda(), x_lengths.cuda()
    """
    assert _confidences(src, "TD001") == [(6, "low"), (6, "low")]


def test_cuda_in_a_library_class_stays_high_real_esrgan_model():
    """xinntao/Real-ESRGAN's realesrgan_model.py: `DiffJPEG(...).cuda()` in the model class that
    users import, labelled a crash on CPU machines and Macs in the third corpus."""
    src = """
    import torch

    class RealESRGANModel(SRGANModel):
        def __init__(self, opt):
            super().__init__(opt)
            self.jpeger = DiffJPEG(differentiable=False).cuda()
    """
    assert _confidences(src, "TD001") == [(7, "high")]


def test_cuda_in_a_script_that_falls_back_to_the_cpu_stays_shown_stable_diffusion_txt2img():
    """CompVis/stable-diffusion's scripts/txt2img.py picks `cuda if available else cpu`, then its
    load_model_from_config calls `model.cuda()`: the line ignores the script's own choice."""
    src = """
    import torch

    def load_model_from_config(config, ckpt):
        model = instantiate_from_config(config.model)
        model.cuda()
        return model

    def main():
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        model = load_model_from_config(config, ckpt).to(device)

    if __name__ == "__main__":
        main()
    """
    assert _confidences(src, "TD001") == [(6, "medium")]


def test_gpu_checkpoint_load_in_a_script_with_no_cpu_path_is_low_act_waveglow():
    """act's imitate_episodes.py and waveglow's inference.py `torch.load` a checkpoint with no
    map_location in code that has no CPU path: the load fails only on a machine the script is
    not written for (sets 9 and 10: act, waveglow, openvla, XMem, 9 lookalikes)."""
    src = """
    import torch

    def eval_bc(ckpt_path):
        policy.load_state_dict(torch.load(ckpt_path))
    """
    assert _confidences(src, "TD101") == [(5, "low")]


def test_gpu_checkpoint_load_in_a_file_with_a_cpu_fallback_stays_high_sfujim_td3():
    """sfujim/TD3's TD3.py picks `cuda if available else cpu`, saves its GPU actor, and loads it
    back with a bare `torch.load`: a crash on the CPU-only machine the file itself supports."""
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    class TD3:
        def load(self, filename):
            self.actor.load_state_dict(torch.load(filename + "_actor"))
    """
    assert _confidences(src, "TD101") == [(8, "high")]


def test_cuda_string_and_cuda_calls_in_a_training_script_are_low_styletts2_dinov2_eval():
    """yl4579/StyleTTS2's train_second.py (`.to('cuda')`, seventh corpus) and DINOv2's eval
    scripts (`torch.cuda.current_device()`, sixth): labelled blind, 3 of 136 hard-coded "cuda"
    strings and 1 of 186 `torch.cuda.*` calls were pitfalls; the same lines in a library class
    keep their confidence."""
    script = """
    import torch

    def main(config):
        mask = length_to_mask(lengths).to('cuda')
        device = torch.cuda.current_device()

    if __name__ == "__main__":
        main(parse())
    """
    library = """
    import torch

    class Trainer:
        def step(self, lengths):
            mask = length_to_mask(lengths).to('cuda')
            device = torch.cuda.current_device()
    """
    for src, confidence in ((script, "low"), (library, "high")):
        found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
        assert sorted((f.rule, f.confidence) for f in found) == [
            ("TD002", confidence),
            ("TD003", confidence),
        ]


def test_a_scripts_cuda_default_is_low_even_when_its_main_leaves_it_out_descript_audio_codec():
    """descriptinc/descript-audio-codec's dac/utils/decode.py: `def decode(..., device="cuda")`
    run by its own `__main__` without the argument: the CLI's default device, the machine its
    author runs it on (a lookalike by the eighth set's precedent for CUDA CLI defaults). The
    same script with a CPU fallback of its own keeps the finding."""
    src = """
    import torch

    def decode(input: str, output: str = "", device: str = "cuda"):
        generator = load_model().to(device)

    if __name__ == "__main__":
        decode("in.dac")
    """
    assert _confidences(src, "TD005") == [(4, "low")]
    fallback = '    OTHER = "cuda" if torch.cuda.is_available() else "cpu"\n'
    with_fallback = src.replace("    import torch\n", "    import torch\n" + fallback)
    assert _confidences(with_fallback, "TD005") == [(5, "high")]


def _td402(src: str) -> list[tuple[int, str]]:
    found, _ = scan_source("train.py", textwrap.dedent(src), ScanOptions(confidence="low"), None)
    return [(f.line, f.confidence) for f in found if f.rule == "TD402"]


def test_a_synchronize_every_n_iterations_is_not_per_step_dinov2_linear_eval():
    """DINOv2's eval/linear.py (sixth corpus) syncs under `if iteration % 10 == 0:` and before
    a periodic checkpoint: once every N steps, not every iteration. An unconditional one is."""
    src = """
    import torch

    for iteration, (data, labels) in enumerate(loader):
        loss = criterion(model(data), labels)
        loss.backward()
        optimizer.step()
        if iteration % 10 == 0:
            torch.cuda.synchronize()
            logger.update(loss=loss.item())
        torch.cuda.synchronize()
    """
    assert _td402(src) == [(11, "medium")]


def test_item_in_a_validation_loop_run_every_n_steps_is_not_flagged_hifi_gan():
    """jik876/hifi-gan's train.py (seventh corpus): `val_err_tot += loss.item()` in the
    validation loop that runs under `if steps % a.validation_interval == 0:`."""
    src = """
    for epoch in range(epochs):
        for i, batch in enumerate(train_loader):
            loss_gen_all.backward()
            optim_g.step()
            if steps % validation_interval == 0:
                for j, batch in enumerate(validation_loader):
                    val_err_tot += F.l1_loss(y_mel, y_g_hat_mel).item()
    """
    assert _td402(src) == []


def test_an_item_that_sizes_host_work_is_low_styletts2_per_utterance_loop():
    """yl4579/StyleTTS2's train_second.py: `mel_length = int(mel_input_length[bib].item() / 2)`
    in a per-utterance loop inside the step, then used to slice: the host needs the number.
    The same loop summing the values (vits' clip_grad_value_ pattern) stays high."""
    src = """
    for epoch in range(epochs):
        for i, batch in enumerate(train_loader):
            loss.backward()
            optimizer.step()
            for bib in range(len(mel_input_length)):
                mel_length = int(mel_input_length[bib].item() / 2)
                total += mel_input_length[bib].item()
    """
    assert _td402(src) == [(7, "low"), (8, "high")]


def test_numpy_of_an_argmax_or_a_batch_label_needs_no_detach_openvla_action_accuracy():
    """openvla's base_strategy.py and finetune.py (tenth corpus): `action_preds[mask].cpu()
    .numpy()` where `action_preds = logits.argmax(dim=2)` and `action_gt = batch["labels"]…`:
    integer tensors never require grad. A model's float output still does."""
    src = """
    import torch

    def training_step(batch):
        output = vla(batch["input_ids"])
        output.loss.backward()
        action_preds = output.logits.argmax(dim=2)
        action_gt = batch["labels"][:, 1:].to(action_preds.device)
        mask = action_gt > begin
        a = decode(action_preds[mask].cpu().numpy())
        b = decode(action_gt[mask].cpu().numpy())
        c = mask.cpu().numpy()
        actions = vla.predict_action(batch["pixel_values"])
        d = actions.cpu().numpy()
    """
    assert _confidences(src, "TD401") == [(14, "medium")]


def test_losses_summed_each_step_and_returned_are_shown_by_the_caller_ppo_litgpt():
    """ikostrikov/pytorch-a2c-ppo-acktr-gail's ppo.py sums `value_loss.item()` every minibatch
    and returns the mean for main.py to print; litgpt's lora.py sums token counts into a dict it
    logs (twelfth corpus, 8 of its 10 false findings). Summed and never shown stays medium."""
    returned = """
    def update(self, rollouts):
        value_loss_epoch = 0
        for e in range(self.ppo_epoch):
            for sample in generator:
                value_loss = compute(sample)
                value_loss.backward()
                self.optimizer.step()
                value_loss_epoch += value_loss.item()
        return value_loss_epoch / num_updates
    """
    assert _td402(returned) == [(9, "low")]
    logged = """
    def fit(fabric, model):
        token_counts = {"raw_tokens": 0}
        for batch in loader:
            loss = model(batch)
            loss.backward()
            optimizer.step()
            token_counts["raw_tokens"] += batch["token_counts"].sum().item()
            metrics = {"tokens": token_counts["raw_tokens"]}
        fabric.log_dict(metrics)
    """
    assert _td402(logged) == [(8, "low")]
    kept = returned.replace("return value_loss_epoch / num_updates", "self.total = 0")
    assert _td402(kept) == [(9, "medium")]


def test_gpu_checkpoint_load_in_device_parameterised_code_is_shown_sfujim_bcq(tmp_path):
    """sfujim/BCQ's DDPG.py (thirteenth corpus, scored blind: six crashes missed): the agent
    takes its device from main.py, which falls back to the CPU, and loads its saved networks
    with a bare `torch.load`. The file itself has no fallback, but its importer runs it on the
    CPU where CUDA is absent. Without such an importer the same load is `low`: of the eighteen
    blind corpora's loads in device-taking code with none, 1 of 14 was a crash (torch_load.py)."""
    agent = """
    import torch

    class DDPG(object):
        def __init__(self, state_dim, action_dim, max_action, device):
            self.actor = Actor(state_dim, action_dim, max_action).to(device)

        def load(self, filename):
            self.critic.load_state_dict(torch.load(filename + "_critic"))
    """
    main = """
    import torch
    import DDPG
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    """
    assert _confidences(agent, "TD101") == [(9, "low")]
    (tmp_path / "DDPG.py").write_text(textwrap.dedent(agent))
    (tmp_path / "main.py").write_text(textwrap.dedent(main))
    found = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings
    td101 = [f for f in found if f.rule == "TD101"]
    assert [(f.line, f.confidence) for f in td101] == [(9, "medium")]
    assert "main.py imports it and falls back to the CPU" in (td101[0].grounds or "")


def test_a_training_function_that_saves_and_meets_the_ranks_still_loads_unsafely_yolov7():
    """WongKinYiu/yolov7's train() (thirteenth corpus, scored blind: four TD102 missed) saves
    checkpoints and waits at a barrier, like sam2's gather helpers whose loads read what the
    job's own ranks just wrote; but it trains, and what it loads is the user's --weights."""
    src = """
    import torch
    import torch.distributed as dist

    def train(hyp, opt, device):
        ckpt = torch.load(opt.weights, map_location=device)
        loss.backward()
        dist.barrier()
        torch.save(ckpt, last)
    """
    assert _confidences(src, "TD102") == [(6, "high")]
