from torch.nn.utils.rnn import pad_sequence


def collate(docs):
    return pad_sequence(docs, batch_first=True, padding_value=0)
