import torch
import xlaport

t = xlaport.target("auto")
model = torch.nn.Linear(64, 64).to(t.device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 64, device=t.device)
with t.autocast():
    loss = model(x).square().mean()
loss.backward()
opt.step()
t.sync()
