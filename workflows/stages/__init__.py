"""The stages of one question, one unit per module, in the order workflows/pipeline.py runs them:

analyse (analyse.py) -> plan (plan.py: the policy picks an arm) -> retrieve (retrieve.py: a
ReActAgent runs the plan through the skill toolkit) -> rank (rank.py: the final calibrated rerank
cut to the evidence shown) -> gate (gate.py) -> answer (answer.py, over the conflicts that
conflicts.py finds) <-> inspect (inspect.py) -> disclose (disclose.py: what the customer is told).

Each stage is a class built once in QAPipeline.warm_up from what it loaded, with a typed `run`
(an input dataclass in, an output dataclass out). context.QuestionRun carries what every stage of
one question shares: its budget and deadline, its span clock, its priority and its degradations.
"""
