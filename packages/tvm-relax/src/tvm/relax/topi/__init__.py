"""te compute definitions used by the operator legalizations (a small topi).

One module per family: :mod:`.elemwise`, :mod:`.linalg`, :mod:`.transform` (shapes and
indexing), :mod:`.reduction`, :mod:`.nn` (convolution, pooling), :mod:`.norm` (softmax and
normalisations), :mod:`.attention`, :mod:`.image` (resize), and hand-written TIR for
:mod:`.scan` (cumsum/cumprod), :mod:`.sort` (sort/argsort/topk) and :mod:`.scatter`.
Imported lazily by the legalizations so that ``import tvm.relax`` stays quick.
"""
