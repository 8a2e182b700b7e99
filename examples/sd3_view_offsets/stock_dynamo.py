"""The SD3 loop's `timesteps[i]` views under stock Dynamo on the CPU: prints how many graphs Dynamo compiled.

Run by notebooks/sd3_view_offsets.ipynb in a fresh process that never imports torch_xla (importing it changes
Dynamo's global configuration for the whole process): ``python stock_dynamo.py STEPS``.
"""

import sys

import torch

steps = int(sys.argv[1])
compiles = 0


def counting(gm, example_inputs):  # count the graphs Dynamo hands to the backend
    global compiles
    compiles += 1
    return gm.forward


@torch.compile(backend=counting, dynamic=False)
def velocity(latents, timestep):  # stand-in for the denoiser
    return torch.tanh(latents) * torch.cos(timestep / 1000)


sigmas = torch.linspace(1, 0, steps + 1)
timesteps = sigmas[:-1] * 1000
latents = torch.ones(1, 4)
for i in range(steps):
    latents = latents + (sigmas[i + 1] - sigmas[i]) * velocity(latents, timesteps[i].expand(1))
assert "torch_xla" not in sys.modules
print(compiles)
