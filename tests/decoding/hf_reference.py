"""`transformers`' `generate` over a next-token table, in its own process.

`python -m tests.decoding.hf_reference CASES.json TABLE.npy OUT.json START END
PAD` runs every case of CASES.json (a list of `generate` keyword dicts;
`max_length` is the table's steps plus the start token unless a case says
otherwise) on a tiny torch model whose logits are
`table[item, position, last_token]` (`table`: `(B, L, V, V)`), and
writes the generated tokens (start token dropped) and sequence scores.
The tests drive our searches with the same table (`table_step_fn`), so
both sides see the same next-token scores.

It runs apart from the tests because TensorFlow, once imported, crashes
the process that then imports triton (which `transformers.generation`
imports through torch); this module never imports keras.
"""

import json
import sys

import numpy as np


def table_model(table, rows_per_item, *, start_id, end_id, pad_id):
    import torch
    from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutput

    class TableConfig(PretrainedConfig):
        model_type = "keras_attention_table"

    class TableLM(PreTrainedModel, GenerationMixin):
        config_class = TableConfig

        def __init__(self, config):
            super().__init__(config)
            self.table = torch.tensor(table)
            self.rows_per_item = rows_per_item
            self.unused = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, **kwargs):
            rows, length = input_ids.shape
            item = torch.arange(rows) // self.rows_per_item
            logits = self.table[item, length - 1, input_ids[:, -1]]
            return CausalLMOutput(logits=logits[:, None, :])

    config = TableConfig(vocab_size=table.shape[-1], eos_token_id=end_id,
                         pad_token_id=pad_id, bos_token_id=start_id)
    return TableLM(config).eval()


def run(cases, table, *, start_id, end_id, pad_id):
    import torch

    results = []
    batch_size = table.shape[0]
    for case in cases:
        case = {"max_length": table.shape[1] + 1, **case}  # + the start token
        model = table_model(table, case.get("num_beams", 1), start_id=start_id,
                            end_id=end_id, pad_id=pad_id)
        with torch.no_grad():
            out = model.generate(
                torch.full((batch_size, 1), start_id), do_sample=False, use_cache=False,
                return_dict_in_generate=True, output_scores=True, **case,
            )
        scores = getattr(out, "sequences_scores", None)
        results.append({
            "token_ids": out.sequences[:, 1:].tolist(),
            "scores": None if scores is None else scores.tolist(),
        })
    return results


def main(argv):
    cases_path, table_path, out_path, start_id, end_id, pad_id = argv
    with open(cases_path) as f:
        cases = json.load(f)
    table = np.load(table_path)
    results = run(cases, table, start_id=int(start_id), end_id=int(end_id), pad_id=int(pad_id))
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1:])
