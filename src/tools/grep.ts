import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const grepTool: Tool = {
  name: 'grep',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('grep is not implemented yet');
  },
};
