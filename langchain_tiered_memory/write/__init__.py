"""What becomes a memory: extraction, the write policy, importance, consolidation.

* :mod:`.rules` (the offline rule engine, its rules per language and domain) and
  :mod:`.extraction` - facts found in what the user says (rule-based offline, or an
  LLM in batches); :mod:`.fact_rules` is the rules' former home, kept for imports;
* :mod:`.writer` - promote and supersede facts;
* :mod:`.forget` - forget requests, commands the memory carries out (not facts);
* :mod:`.importance` - how much a memory matters (1-10);
* :mod:`.consolidation` - reflection: observations from written facts.
"""
