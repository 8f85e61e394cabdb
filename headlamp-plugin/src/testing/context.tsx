/* What Headlamp provides around a plugin's view: its redux store, a router and its
 * light theme (the tests and the stories render inside it). */

import { lightTheme } from '@kinvolk/headlamp-plugin/lib/components/App/defaultAppThemes';
import { createMuiTheme } from '@kinvolk/headlamp-plugin/lib/lib/themes';
import store from '@kinvolk/headlamp-plugin/lib/redux/stores/store';
import { ThemeProvider } from '@mui/material/styles';
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
