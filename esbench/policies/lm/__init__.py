"""Language-model policies: a small decoder-only transformer, its ES population and decoding.

- :mod:`.model`: the model and tokenizer from a config (built locally, or a hub id).
- :mod:`.population`: ES members as perturbations of the weights, named by seeds; full rank
  (OpenAI-ES) or EGGROLL's low rank, the whole population in one batched forward pass.
- :mod:`.decoding`: the fixed decoding protocol (greedy) and rewards of completions.
- :mod:`.evaluation`: task accuracy, held-out loss and KL to a reference model.
- :mod:`.pretrain`: the prior capability (task A), trained here and cached by config hash.
"""
