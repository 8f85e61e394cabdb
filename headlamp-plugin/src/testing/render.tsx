/* Rendering a view as Headlamp does: its redux store, a router and its light theme
 * around it (what Headlamp's own test context provides). */

import { lightTheme } from '@kinvolk/headlamp-plugin/lib/components/App/defaultAppThemes';
import { createMuiTheme } from '@kinvolk/headlamp-plugin/lib/lib/themes';
import store from '@kinvolk/headlamp-plugin/lib/redux/stores/store';
import { ThemeProvider } from '@mui/material/styles';
import { render, RenderResult } from '@testing-library/react';
import React from 'react';
import { Provider } from 'react-redux';
import { MemoryRouter } from 'react-router-dom';

export function InHeadlamp({ children }: { children: React.ReactNode }) {
  return (
    <Provider store={store}>
      <MemoryRouter>
        <ThemeProvider theme={createMuiTheme(lightTheme)}>{children}</ThemeProvider>
      </MemoryRouter>
    </Provider>
  );
}

export function renderInTheme(node: React.ReactElement): RenderResult {
  return render(<InHeadlamp>{node}</InHeadlamp>);
}

/** The bars a view drew: [domain, count] in the order shown. */
export function bars(root: ParentNode): [string, number][] {
  return Array.from(root.querySelectorAll('[data-testid="domain-bar"]')).map(el => [
    el.getAttribute('data-domain') ?? '',
    Number(el.getAttribute('data-count')),
  ]);
}
