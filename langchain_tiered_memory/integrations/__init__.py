"""Where LangChain and LangGraph users plug the memory in, one adapter per module.

* :mod:`.langgraph` - LangGraph nodes and the prebuilt memory graph;
* :mod:`.agents` - the ``create_agent`` middleware and ``create_react_agent``'s pre-model hook;
* :mod:`.tools` - ``retrieve_memory`` and the MemGPT-style core memory tools;
* :mod:`.history` - ``RunnableWithMessageHistory``: the chat history and its factory;
* :mod:`.classic` - ``ConversationSummaryBufferMemory``'s drop-in replacement;
* :mod:`.langgraph_store` - a LangGraph ``BaseStore`` over the memory;
* :mod:`.mcp_server` - the memory as an MCP server (``tiered-memory mcp``);
* :mod:`.identity` and :mod:`.resolver` - whose memory a run uses;
* :mod:`.app_model` - the application's chat model as the memories' size and fact extractor.
"""
