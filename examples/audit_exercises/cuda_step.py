import torch

model = torch.nn.Linear(64, 64).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
x = torch.randn(8, 64, device="cuda")
with torch.autocast("cuda", dtype=torch.float16):
    loss = model(x).square().mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
torch.cuda.synchronize()
