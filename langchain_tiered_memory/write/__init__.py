"""What becomes a memory: extraction, the write policy, importance, consolidation.

* :mod:`.rules` (the offline rule engine, its rules per language and domain) and
  :mod:`.extraction` - facts found in what the user says (rule-based offline, or an
  LLM in batches); :mod:`.fact_rules` is the rules' former home, kept for imports;
* :mod:`.candidate` - the one candidate type every extractor gives;
* :mod:`.policy` - the write policy: promote, possible, supersede, end, undo;
* :mod:`.attributes` - which facts hold one value at a time;
* :mod:`.writer` - the extractor and the policy over turns not extracted yet;
* :mod:`.forget` - forget requests, commands the memory carries out (not facts);
* :mod:`.importance` - how much a memory matters (1-10);
* :mod:`.consolidation` - reflection: observations from written facts.
"""
