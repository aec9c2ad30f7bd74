"""The Postgres backend: every user's memory in one database, pgvector for vectors.

* :mod:`.db` - the connection pool and transactions (advisory locks, errors);
* :mod:`.schema` - the tables (those of SQLite, with a ``tsvector`` and a
  pgvector column on ``records``);
* :mod:`.records` - the record store (keyword and dense search, forgetting);
  :mod:`.keywords` - what goes into ``tsvector`` and what a query becomes;
  :mod:`.ann` - HNSW indexes for very large users; :mod:`.access` - access
  times written in the background;
* :mod:`.backend` - :class:`~.backend.PostgresBackend` (the shared SQL
  operations over all of it, LangGraph checkpointers, retries, ``VACUUM``);
* :mod:`.migrate` - ``tiered-memory migrate``: a SQLite data directory into Postgres.

Needs the ``postgres`` extra, ``pip install -e '.[postgres]'`` in a checkout (psycopg 3, its
pool, pgvector's adapter, LangGraph's Postgres checkpointer).
"""
